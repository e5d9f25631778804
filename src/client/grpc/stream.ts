/**
 * InferStream: one ModelStreamInfer call (a bidirectional gRPC stream) as an async iterable. send()
 * queues requests, end() half-closes, responses are read with `for await`; breaking out of the loop or
 * aborting the signal cancels the call. An in-band `error_message` (one failed request; the stream goes
 * on) is yielded as an item with `error`; a gRPC status that ends the stream is thrown by the iterator.
 */
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import { NereidClientError } from '../errors.js';
import type { InferInput } from '../infer-input.js';
import type { InferResult } from '../infer-result.js';
import type { InferOptions } from '../types.js';
import {
  decodeInferResponse,
  encodeInferRequest,
  type ModelInferRequestMsg,
  type ModelInferResponseMsg,
} from './infer-codec.js';

export interface StreamInferRequest extends Omit<InferOptions, 'headers' | 'signal'> {
  readonly model: string;
  readonly inputs: readonly InferInput[];
  /** Ask a decoupled model for an empty response that only carries the final flag. */
  readonly enableEmptyFinalResponse?: boolean;
}

/** One stream response: a result, or the in-band error of one request. */
export type StreamInferResponse =
  | { readonly result: InferResult; readonly error?: undefined }
  | { readonly result?: undefined; readonly error: NereidClientError };

export interface ModelStreamInferResponseMsg {
  error_message?: string;
  infer_response?: ModelInferResponseMsg | null;
}

/** Pause reading from the server when this many responses wait for the consumer. */
const HIGH_WATER = 256;

type Waiter = {
  resolve: (r: IteratorResult<StreamInferResponse>) => void;
  reject: (err: unknown) => void;
};

export class InferStream implements AsyncIterable<StreamInferResponse> {
  readonly #call: ClientDuplexStream<ModelInferRequestMsg, ModelStreamInferResponseMsg>;
  readonly #signal: AbortSignal | undefined;
  readonly #queue: StreamInferResponse[] = [];
  readonly #waiters: Waiter[] = [];
  #failure: Error | undefined;
  #done = false;
  #ended = false;
  #iterating = false;
  readonly #onAbort = (): void => this.cancel();

  /** @internal Created by GrpcClient.streamInfer(). */
  constructor(
    call: ClientDuplexStream<ModelInferRequestMsg, ModelStreamInferResponseMsg>,
    signal?: AbortSignal,
  ) {
    this.#call = call;
    this.#signal = signal;
    call.on('data', (msg: ModelStreamInferResponseMsg) => this.#push(toItem(msg)));
    call.on('error', (err: ServiceError) => this.#finish(this.#errorOf(err)));
    call.on('end', () => this.#finish(undefined));
    signal?.addEventListener('abort', this.#onAbort, { once: true });
    if (signal?.aborted) this.cancel();
  }

  /** Sends one request on the stream. Throws on bad arguments or after end()/cancel(). */
  send(request: StreamInferRequest): void {
    if (this.#ended || this.#done) throw new NereidClientError('the stream is closed for sending');
    const msg = encodeInferRequest(request.model, request.inputs, request);
    if (request.enableEmptyFinalResponse) {
      msg.parameters.triton_enable_empty_final_response = { bool_param: true };
    }
    this.#call.write(msg);
  }

  /** Half-closes: no more requests; responses still arrive until the server ends the stream. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#call.end();
  }

  /** Cancels the call; the iterator then ends with the abort reason (or a CANCELLED error). */
  cancel(): void {
    this.#ended = true;
    if (this.#done) return;
    this.#call.cancel();
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamInferResponse> {
    if (this.#iterating) throw new TypeError('an InferStream can be iterated only once');
    this.#iterating = true;
    return {
      next: () => this.#next(),
      return: () => {
        this.cancel();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  /** Results only: throws the first in-band error instead of yielding it. */
  async *results(): AsyncGenerator<InferResult, void, undefined> {
    for await (const item of this) {
      if (item.error) throw item.error;
      yield item.result;
    }
  }

  #next(): Promise<IteratorResult<StreamInferResponse>> {
    const item = this.#queue.shift();
    if (item !== undefined) {
      if (this.#queue.length < HIGH_WATER / 2 && this.#call.isPaused()) this.#call.resume();
      return Promise.resolve({ done: false, value: item });
    }
    if (this.#done) {
      return this.#failure === undefined
        ? Promise.resolve({ done: true, value: undefined })
        : Promise.reject(this.#failure);
    }
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  #push(item: StreamInferResponse): void {
    const w = this.#waiters.shift();
    if (w) {
      w.resolve({ done: false, value: item });
      return;
    }
    this.#queue.push(item);
    if (this.#queue.length >= HIGH_WATER) this.#call.pause();
  }

  #finish(failure: Error | undefined): void {
    if (this.#done) return;
    this.#done = true;
    this.#failure = failure;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    for (const w of this.#waiters.splice(0)) {
      if (failure === undefined) w.resolve({ done: true, value: undefined });
      else w.reject(failure);
    }
  }

  #errorOf(err: ServiceError): Error {
    const reason: unknown = this.#signal?.aborted ? this.#signal.reason : undefined;
    if (reason instanceof Error) return reason;
    return NereidClientError.fromGrpc(err.code, err.details, err);
  }
}

function toItem(msg: ModelStreamInferResponseMsg): StreamInferResponse {
  if (msg.error_message) return { error: new NereidClientError(msg.error_message) };
  try {
    return { result: decodeInferResponse(msg.infer_response ?? {}) };
  } catch (err) {
    return { error: err instanceof NereidClientError ? err : new NereidClientError(String(err)) };
  }
}
