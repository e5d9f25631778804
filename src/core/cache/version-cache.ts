/**
 * The response cache on one model version's request path (a model or an ensemble with
 * `response_cache { enable: true }` on a server with a cache), where Triton's schedulers put it: after the
 * request was validated and accepted, before it is queued. A hit answers at once from the cache; a miss
 * runs the request as usual and stores its successful answer before the client gets it, so the next
 * identical request hits (Triton's local and Redis caches insert before sending too). Statistics follow
 * Triton: a hit is a success with a queue time and a cache_hit duration, a miss adds its lookup and insert
 * time as cache_miss (model-stats.ts).
 *
 * Not cached, as in Triton: decoupled models and sequence models (their configs are refused with
 * response_cache on, model-config/validate.ts), and failed or cancelled requests.
 */
import { NereidError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { PreparedRequest } from '../inference.js';
import type { ResponseSink } from '../response-stream.js';
import type { ModelStats } from '../stats/model-stats.js';
import type { RequestRecord } from '../stats/request-record.js';
import type { InferenceResponse } from '../types.js';
import { requestCacheKey, type CacheKey } from './key.js';
import type { CachedResponse, InsertOutcome, ResponseCache } from './response-cache.js';

const now = (): bigint => process.hrtime.bigint();

/**
 * In front of a request's response stream on a miss: the final (only) response is stored, then passed on.
 * It reports done as soon as it took the final response, so the sender never pushes twice while an insert
 * into Redis is under way.
 */
class StoringSink implements ResponseSink<InferenceResponse> {
  private ended = false;

  constructor(
    private readonly target: ResponseSink<InferenceResponse>,
    private readonly store: (response: InferenceResponse) => void | Promise<void>,
  ) {}

  get done(): boolean {
    return this.ended || this.target.done;
  }

  push(item: InferenceResponse, final: boolean): void {
    if (this.done) return;
    if (!final) {
      this.target.push(item, final);
      return;
    }
    this.ended = true;
    const stored = this.store(item);
    if (stored === undefined) this.target.push(item, true);
    else void stored.then(() => this.target.push(item, true));
  }

  fail(error: NereidError): void {
    this.ended = true;
    this.target.fail(error);
  }

  close(): void {
    this.ended = true;
    this.target.close();
  }
}

export class VersionCache {
  /** Lookups still waiting for the cache (Redis): the version waits for them before it unloads. */
  private pending = 0;
  private idle: (() => void) | undefined;
  private warnedTooLarge = false;

  constructor(
    private readonly cache: ResponseCache,
    private readonly modelName: string,
    private readonly version: string,
    private readonly stats: ModelStats,
    private readonly log: Logger,
  ) {}

  /**
   * Answers `request` from the cache into `stream`, or calls `compute` with the sink its answer must go
   * to. `compute` runs synchronously on a local cache's miss, later on a remote cache's.
   */
  serve(
    request: PreparedRequest,
    record: RequestRecord,
    stream: ResponseSink<InferenceResponse>,
    compute: (sink: ResponseSink<InferenceResponse>) => void,
  ): void {
    const key = requestCacheKey(this.modelName, this.version, request);
    const lookupStart = now();
    const found = this.cache.lookup(key);
    if (!(found instanceof Promise)) {
      this.settle(found, key, lookupStart, request, record, stream, compute);
      return;
    }
    this.pending++;
    void found.then((response) => {
      try {
        this.settle(response, key, lookupStart, request, record, stream, compute);
      } catch (err) {
        // Nothing above the cache is waiting on this call any more: the request's stream gets the error.
        stream.fail(NereidError.from(err));
      } finally {
        this.pending--;
        if (this.pending === 0) this.idle?.();
      }
    });
  }

  /** Resolves once no lookup is outstanding (called while unloading, after new requests stopped). */
  whenIdle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.idle;
      this.idle = (): void => {
        this.idle = undefined;
        previous?.();
        resolve();
      };
    });
  }

  private settle(
    found: CachedResponse | undefined,
    key: CacheKey,
    lookupStart: bigint,
    request: PreparedRequest,
    record: RequestRecord,
    stream: ResponseSink<InferenceResponse>,
    compute: (sink: ResponseSink<InferenceResponse>) => void,
  ): void {
    const lookupEnd = now();
    if (found !== undefined) {
      const response: InferenceResponse = {
        modelName: this.modelName,
        modelVersion: this.version,
        id: request.id,
        outputs: found.outputs,
        parameters: found.parameters,
        final: true,
      };
      this.stats.recordCacheHit(record, lookupStart, lookupEnd, now());
      stream.push(response, true);
      return;
    }
    const lookupNs = Number(lookupEnd - lookupStart);
    compute(new StoringSink(stream, (response) => this.store(key, response, lookupNs)));
  }

  private store(key: CacheKey, response: InferenceResponse, lookupNs: number): void | Promise<void> {
    const insertStart = now();
    const outcome = this.cache.insert(key, { outputs: response.outputs, parameters: response.parameters });
    const done = (result: InsertOutcome): void => {
      this.stats.recordCacheMiss(lookupNs + Number(now() - insertStart));
      if (result === 'too-large') this.tooLarge(response);
    };
    if (!(outcome instanceof Promise)) {
      done(outcome);
      return;
    }
    return outcome.then(done);
  }

  private tooLarge(response: InferenceResponse): void {
    let bytes = 0;
    for (const t of response.outputs) bytes += t.data.length;
    const message =
      `response of model '${this.modelName}' version ${this.version} (${bytes} tensor bytes) is larger ` +
      'than the whole response cache: not cached';
    if (this.warnedTooLarge) {
      this.log.verbose(message);
      return;
    }
    this.warnedTooLarge = true;
    this.log.warn(`${message} (said once per model version; --log-verbose=1 shows every one)`);
  }
}
