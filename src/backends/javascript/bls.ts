/**
 * Main-thread side of BLS for one worker: a model's `request.exec()` / `stream()` arrives as a `bls`
 * message, runs on the server through the ModelLoadContext's serverApi (any model, any backend), and every
 * response goes back as a `bls-result`, the last one final; a failure as `bls-error`. `bls-cancel` (the
 * model stopped reading, or its AbortSignal fired) aborts the call. As in Triton, a model calling itself
 * with no free instance waits forever.
 */
import type { ServerApi } from '../../backend-api/backend.js';
import { NereidError, unavailable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { JsToWorker, WireBlsRequest } from './protocol.js';
import { checkedCoreTensor, copyToWire } from './tensors.js';

type Post = (message: JsToWorker, transfer?: readonly ArrayBuffer[]) => void;

export class BlsBridge {
  private readonly calls = new Map<number, AbortController>();

  constructor(
    private readonly serverApi: ServerApi | undefined,
    private readonly post: Post,
    private readonly log: Logger,
    private readonly label: string,
    /** The calling model: on-demand mode keeps what it calls loaded while it is busy (ServerInferRequest.callerModel). */
    private readonly callerModel?: string,
  ) {}

  start(call: number, request: WireBlsRequest): void {
    const ac = new AbortController();
    this.calls.set(call, ac);
    void this.run(call, request, ac.signal).finally(() => this.calls.delete(call));
  }

  cancel(call: number): void {
    this.calls.get(call)?.abort();
  }

  /** The worker is gone: nobody waits for these calls any more. */
  abortAll(): void {
    for (const ac of this.calls.values()) ac.abort();
    this.calls.clear();
  }

  private async run(call: number, r: WireBlsRequest, signal: AbortSignal): Promise<void> {
    try {
      if (!this.serverApi)
        throw unavailable('BLS is not available: this server gave the javascript backend no inference API');
      const inputs = (Array.isArray(r.inputs) ? r.inputs : []).map((t) => checkedCoreTensor(t, 'BLS input'));
      const stream = this.serverApi.infer({
        modelName: String(r.modelName),
        modelVersion: typeof r.modelVersion === 'string' ? r.modelVersion : '',
        id: typeof r.id === 'string' ? r.id : '',
        inputs,
        outputs: (Array.isArray(r.outputs) ? r.outputs : []).map((name) => ({ name: String(name) })),
        parameters: typeof r.parameters === 'object' && r.parameters !== null ? r.parameters : {},
        signal,
        ...(this.callerModel !== undefined && { callerModel: this.callerModel }),
      });
      let final = false;
      for await (const res of stream) {
        // The core keeps its response buffers (a batch's outputs share one; a cache may hold them): copy.
        const transfer: ArrayBuffer[] = [];
        const outputs = res.outputs.map((t) => copyToWire(t, transfer));
        this.post(
          {
            kind: 'bls-result',
            call,
            result: {
              outputs,
              parameters: { ...res.parameters },
              modelName: res.modelName,
              modelVersion: res.modelVersion,
              id: res.id,
              final: res.final,
            },
          },
          transfer,
        );
        final ||= res.final;
        if (signal.aborted) break;
      }
      if (!final && !signal.aborted) {
        this.post({
          kind: 'bls-result',
          call,
          result: {
            outputs: [],
            parameters: {},
            modelName: r.modelName,
            modelVersion: '',
            id: r.id,
            final: true,
          },
        });
      }
    } catch (err) {
      const e = NereidError.from(err);
      this.log.verbose(`BLS call from '${this.label}' to '${String(r.modelName)}' failed: ${e.message}`);
      this.post({ kind: 'bls-error', call, error: { code: e.code, message: e.message } });
    }
  }
}
