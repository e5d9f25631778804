/**
 * Business Logic Scripting: `pb_utils.InferenceRequest(...).exec()` in a model becomes a BLS_REQUEST frame;
 * this runs it on the server through the ModelLoadContext's serverApi (any model, any backend) and streams
 * every response back as BLS_RESPONSE frames, the last one final. Errors (unknown model, bad input, the
 * target failing) come back as an error response, as Triton does; `ResponseIterator.cancel()` aborts the
 * call. As in Triton, a model calling itself with no free instance waits forever: don't.
 */
import type { ParameterValue, ServerApi, ServerInferRequest } from '../../backend-api/backend.js';
import { NereidError, internal, unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import type { Frame } from './frames.js';
import { MessageType, tritonErrorCode, type BlsRequestMessage } from './protocol.js';
import type { StubProcess } from './stub-process.js';
import { BlobBuilder, describeTensors, readTensors, type FreedRanges } from './tensors.js';

export type ServerInfer = ServerApi['infer'];

function parseParameters(text: unknown): Record<string, ParameterValue> {
  if (typeof text !== 'string' || text === '') return {};
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw internal('BLS request parameters must be a JSON object');
  }
  const out: Record<string, ParameterValue> = {};
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) {
      out[k] = v;
    } else {
      throw internal(`BLS request parameter '${k}' must be a bool, an int or a string`);
    }
  }
  return out;
}

/** The core request for a BLS header: flags, correlation id and timeout become Triton's parameters. */
export function blsRequest(h: BlsRequestMessage, inputs: Tensor[], signal: AbortSignal): ServerInferRequest {
  const parameters = parseParameters(h.parameters);
  const c = String(h.correlation_id);
  const corr = h.correlation_is_string === true ? c : BigInt(/^\d+$/.test(c) ? c : '0');
  if (corr !== '' && corr !== 0n) parameters.sequence_id = corr;
  if ((h.flags & 1) !== 0) parameters.sequence_start = true;
  if ((h.flags & 2) !== 0) parameters.sequence_end = true;
  if (typeof h.timeout_us === 'number' && h.timeout_us > 0) parameters.timeout = h.timeout_us;
  return {
    modelName: String(h.model_name),
    modelVersion: typeof h.model_version === 'number' && h.model_version >= 0 ? String(h.model_version) : '',
    id: typeof h.request_id === 'string' ? h.request_id : '',
    inputs,
    outputs: Array.isArray(h.requested_outputs)
      ? h.requested_outputs.map((name) => ({ name: String(name) }))
      : [],
    parameters,
    signal,
  };
}

export class BlsService {
  private readonly calls = new Map<number, AbortController>();

  constructor(
    private readonly stub: StubProcess,
    private readonly infer: ServerInfer | undefined,
    private readonly threshold: number,
    private readonly log: Logger,
  ) {}

  /** No call is running (so the host->stub file's space can be reused). */
  get idle(): boolean {
    return this.calls.size === 0;
  }

  onFrame(frame: Frame): void {
    const q = (frame.header as { call?: unknown }).call;
    if (typeof q !== 'number') return;
    if (frame.type === MessageType.BlsCancel) this.calls.get(q)?.abort();
    else void this.run(q, frame);
  }

  abortAll(): void {
    for (const ac of this.calls.values()) ac.abort();
    this.calls.clear();
  }

  private async run(q: number, frame: Frame): Promise<void> {
    const ac = new AbortController();
    this.calls.set(q, ac);
    const h = frame.header as BlsRequestMessage;
    try {
      const freed: FreedRanges = [];
      let inputs: Tensor[];
      try {
        inputs = await readTensors(h.inputs, frame.blob, this.stub.files?.fromStub, freed);
      } finally {
        if (freed.length > 0) this.stub.send(MessageType.Free, { ranges: freed });
      }
      if (!this.infer) {
        throw unavailable(
          'BLS is not available: this server did not give the python backend its inference API',
        );
      }
      let final = false;
      for await (const r of this.infer(blsRequest(h, inputs, ac.signal))) {
        await this.reply(q, r.outputs, r.parameters, r.final);
        final ||= r.final;
      }
      if (!final) await this.reply(q, [], {}, true);
    } catch (err) {
      const e = NereidError.from(err);
      if (this.log.isVerbose()) this.log.verbose(`BLS request from '${this.stub.name}' failed: ${e.message}`);
      this.stub.send(MessageType.BlsResponse, {
        call: q,
        final: true,
        error: { code: tritonErrorCode(e.code), message: e.message },
      });
    } finally {
      this.calls.delete(q);
    }
  }

  private async reply(
    q: number,
    outputs: readonly Tensor[],
    parameters: Readonly<Record<string, ParameterValue>>,
    final: boolean,
  ): Promise<void> {
    const blob = new BlobBuilder();
    const sink = { arena: this.stub.files?.toStub, threshold: this.threshold };
    const tensors = await describeTensors(outputs, sink, blob);
    const p = Object.keys(parameters).length > 0 ? JSON.stringify(parameters, bigintReplacer) : undefined;
    this.stub.send(
      MessageType.BlsResponse,
      { call: q, final, outputs: tensors, ...(p ? { parameters: p } : {}) },
      blob.parts,
    );
  }
}

function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? Number(value) : value;
}
