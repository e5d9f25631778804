/**
 * The seam between the SDK classes a model uses and the worker thread that runs it. Inside a model's
 * worker the runtime binds itself here (logging, BLS calls, the metric registry); outside one (an
 * application using the in-process API) nothing is bound, and calls that need a server say so.
 */
import type { NereidError } from '../common/errors.js';
import type { Tensor } from './tensor.js';

export type LogLevel = 'info' | 'warn' | 'error' | 'verbose';

/** Plain data of one BLS request, as the runtime forwards it to the server. */
export interface BlsCall {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly inputs: readonly Tensor[];
  readonly requestedOutputNames: readonly string[];
  readonly parameters: Readonly<Record<string, string | number | boolean | bigint>>;
}

/** One response of a BLS call, or the error that ended it. */
export interface BlsResult {
  readonly outputs: readonly Tensor[];
  readonly parameters: Readonly<Record<string, string | number | boolean | bigint>>;
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly final: boolean;
}

export interface SdkRuntime {
  log(level: LogLevel, message: string): void;
  /** Runs a request on the server (any model): 0..n results, the last final; errors reject. */
  infer(call: BlsCall, signal: AbortSignal | undefined): AsyncIterable<BlsResult>;
}

export type { NereidError };

let bound: SdkRuntime | undefined;

/** Called by the worker runtime once, before the model module is imported. */
export function bindRuntime(runtime: SdkRuntime | undefined): void {
  bound = runtime;
}

export function currentRuntime(): SdkRuntime | undefined {
  return bound;
}
