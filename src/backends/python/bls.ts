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
import type { Frame } from './frames.js';
import { MessageType, tritonErrorCode, type BlsRequestHeader } from './protocol.js';
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
export function blsRequest(
  h: BlsRequestHeader,
  inputs: Tensor[],
  signal: AbortSignal,
  parentTrace?: BackendTraceToken,
): ServerInferRequest {
  const parameters = parseParameters(h.p);
  const corr = h.ct === 1 ? String(h.c) : BigInt(/^\d+$/.test(String(h.c)) ? String(h.c) : '0');
  if (corr !== '' && corr !== 0n) parameters.sequence_id = corr;
  if ((h.fl & 1) !== 0) parameters.sequence_start = true;
  if ((h.fl & 2) !== 0) parameters.sequence_end = true;
  if (typeof h.to === 'number' && h.to > 0) parameters.timeout = h.to;
  return {
    modelName: String(h.m),
    modelVersion: typeof h.v === 'number' && h.v >= 0 ? String(h.v) : '',
    id: typeof h.id === 'string' ? h.id : '',
    inputs,
    outputs: Array.isArray(h.o) ? h.o.map((name) => ({ name: String(name) })) : [],
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
    /** The trace of a request this stub is executing (by its id on the stub), for `trace=request.trace()`. */
    private readonly traceOf: (rid: number) => BackendTraceToken | undefined = () => undefined,
  ) {}

  /** No call is running (so the host->stub file's space can be reused). */
  get idle(): boolean {
    return this.calls.size === 0;
  }

  onFrame(frame: Frame): void {
    const q = (frame.header as { q?: unknown }).q;
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
    const h = frame.header as BlsRequestHeader;
    try {
      const freed: FreedRanges = [];
      let inputs: Tensor[];
      try {
        inputs = await readTensors(h.t, frame.blob, this.stub.files?.fromStub, freed);
      } finally {
        if (freed.length > 0) this.stub.send(MessageType.Free, { o: freed });
      }
      if (!this.infer) {
        throw unavailable(
          'BLS is not available: this server did not give the python backend its inference API',
        );
      }
      let final = false;
      const parent = typeof h.tr === 'number' ? this.traceOf(h.tr) : undefined;
      for await (const r of this.infer(blsRequest(h, inputs, ac.signal, parent))) {
        await this.reply(q, r.outputs, r.parameters, r.final);
        final ||= r.final;
      }
      if (!final) await this.reply(q, [], {}, true);
    } catch (err) {
      const e = NereidError.from(err);
      if (this.log.isVerbose()) this.log.verbose(`BLS request from '${this.stub.name}' failed: ${e.message}`);
      this.stub.send(MessageType.BlsResponse, {
        q,
        f: true,
        e: { c: tritonErrorCode(e.code), m: e.message },
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
    const t = await describeTensors(outputs, sink, blob);
    const p = Object.keys(parameters).length > 0 ? JSON.stringify(parameters, bigintReplacer) : undefined;
    this.stub.send(MessageType.BlsResponse, { q, f: final, t, ...(p ? { p } : {}) }, blob.parts);
  }
}

function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? Number(value) : value;
}
