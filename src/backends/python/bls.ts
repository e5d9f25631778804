/**
 * Business Logic Scripting: `pb_utils.InferenceRequest(...).exec()` in a model becomes a BLS_REQUEST frame;
 * this runs it on the server through the ModelLoadContext's serverApi (any model, any backend) and streams
 * every response back as BLS_RESPONSE frames, the last one final. Errors (unknown model, bad input, the
 * target failing) come back as an error response, as Triton does; `ResponseIterator.cancel()` aborts the
 * call. As in Triton, a model calling itself with no free instance waits forever: don't.
 */
import type {
  BackendTraceToken,
  ParameterValue,
  ServerApi,
  ServerInferRequest,
} from '../../backend-api/backend.js';
import { NereidError, internal, unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import { isJsonObject } from './frames.js';
import { MessageType, tritonErrorCode, type BlsRequestIn } from './protocol.js';
import type { StubProcess } from './stub-process.js';
import { BlobBuilder, describeTensors, readTensors, type FreedRanges } from './tensors.js';

export type ServerInfer = ServerApi['infer'];

function parseParameters(text: string): Record<string, ParameterValue> {
  if (text === '') return {};
  const parsed: unknown = JSON.parse(text);
  if (!isJsonObject(parsed)) {
    throw internal('BLS request parameters must be a JSON object');
  }
  const out: Record<string, ParameterValue> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) {
      out[k] = v;
    } else {
      throw internal(`BLS request parameter '${k}' must be a bool, an int or a string`);
    }
  }
  return out;
}

/** The core request for a BLS header: flags, correlation id and timeout become Triton's parameters. */
export function blsRequest(
  h: BlsRequestIn,
  inputs: Tensor[],
  signal: AbortSignal,
  parentTrace?: BackendTraceToken,
): ServerInferRequest {
  const parameters = parseParameters(h.parameters);
  const c = h.correlationId;
  const corr = h.correlationIsString ? c : BigInt(/^\d+$/.test(c) ? c : '0');
  if (corr !== '' && corr !== 0n) parameters.sequence_id = corr;
  if ((h.flags & 1) !== 0) parameters.sequence_start = true;
  if ((h.flags & 2) !== 0) parameters.sequence_end = true;
  if (h.timeoutUs > 0) parameters.timeout = h.timeoutUs;
  return {
    modelName: h.modelName,
    modelVersion: h.modelVersion,
    id: h.requestId,
    inputs,
    outputs: h.requestedOutputs.map((name) => ({ name })),
    parameters,
    signal,
    ...(parentTrace && { parentTrace }),
  };
}

export class BlsService {
  private readonly calls = new Map<number, AbortController>();

  constructor(
    private readonly stub: StubProcess,
    private readonly infer: ServerInfer | undefined,
    private readonly threshold: number,
    private readonly log: Logger,
    /** The trace of a request this stub is executing (by its rid), for `trace=request.trace()`. */
    private readonly traceOf: (rid: number) => BackendTraceToken | undefined = () => undefined,
  ) {}

  /** No call is running (so the host->stub file's space can be reused). */
  get idle(): boolean {
    return this.calls.size === 0;
  }

  /** A BLS_REQUEST: runs the call, its responses go back as BLS_RESPONSE frames. */
  onRequest(h: BlsRequestIn, blob: Buffer): void {
    if (h.call !== 0) void this.run(h, blob);
  }

  /** A BLS_CANCEL (ResponseIterator.cancel()). */
  onCancel(call: number): void {
    this.calls.get(call)?.abort();
  }

  abortAll(): void {
    for (const ac of this.calls.values()) ac.abort();
    this.calls.clear();
  }

  private async run(h: BlsRequestIn, blob: Buffer): Promise<void> {
    const q = h.call;
    const ac = new AbortController();
    this.calls.set(q, ac);
    try {
      const freed: FreedRanges = [];
      let inputs: Tensor[];
      try {
        inputs = await readTensors(h.inputs, blob, this.stub.files?.fromStub, freed);
      } finally {
        if (freed.length > 0) this.stub.send(MessageType.Free, { ranges: freed });
      }
      if (!this.infer) {
        throw unavailable(
          'BLS is not available: this server did not give the python backend its inference API',
        );
      }
      let final = false;
      const parent = h.traceRid !== 0 ? this.traceOf(h.traceRid) : undefined;
      for await (const r of this.infer(blsRequest(h, inputs, ac.signal, parent))) {
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
