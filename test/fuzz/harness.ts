/**
 * The fuzzing harness: what a fuzz target is, which errors a decoder may end in, and the runner that turns a
 * target into a fast-check property with a per-case watchdog and counts what happened.
 *
 * The properties every target checks, on every generated case:
 * - no crash: a decoder may refuse input only with a NereidError (or, for gRPC transport framing, a
 *   GrpcStatusError); a TypeError, RangeError or any other exception is a bug;
 * - no internal error: INTERNAL (or UNKNOWN) for bad input is a bug, except the few Triton itself answers
 *   with INTERNAL, listed per target with the reason;
 * - no hang: an asynchronous case is raced against a watchdog timer (a limit far above any case's real
 *   duration: it catches a promise that never settles, it is not a speed check); a synchronous case that
 *   never returns is caught by the node:test timeout, and by the nightly runner's heartbeat, which runs
 *   each target in a worker thread;
 * - and whatever the target asserts itself (round-trips, invariants).
 */
import fc from 'fast-check';
import { NereidError } from '../../src/common/errors.js';
import { GrpcStatusError, Status } from '../../src/frontends/grpc/transport/status.js';

/** Per-case services a target's run() uses. */
export interface CaseContext {
  /**
   * Runs one decoder call on hostile input: returns its result, or undefined when it refused the input
   * with an allowed error (counted by code). Any other exception fails the case.
   */
  attempt<T>(what: string, fn: () => T): T | undefined;
  attemptAsync<T>(what: string, fn: () => Promise<T>): Promise<T | undefined>;
  /** Counts a named event (e.g. which branch a case took), shown in the nightly report. */
  note(event: string): void;
}

export interface FuzzTarget<T = unknown> {
  /** Short id, e.g. 'http-infer'. */
  readonly name: string;
  /** One line: what is fed to what. */
  readonly what: string;
  /** Share of the cases of a whole run (relative to the other targets). */
  readonly weight: number;
  readonly arbitrary: fc.Arbitrary<T>;
  /** Runs one case; throws (an assertion, or via CaseContext) when a property does not hold. */
  run(input: T, ctx: CaseContext): void | Promise<void>;
  /** INTERNAL errors Triton itself answers for this input (message patterns), with the reason in a comment. */
  readonly allowedInternal?: readonly RegExp[];
  /** Before the first case / after the last (servers, temporary folders). */
  setup?(): Promise<void>;
  teardown?(): Promise<void>;
}

/** Builds a target with its input type checked against its run(). */
export const target = <T>(t: FuzzTarget<T>): FuzzTarget<T> => t;

/** A property failure found by the harness itself (crash, internal error, hang). */
export class FuzzFailure extends Error {
  override readonly name = 'FuzzFailure';
}

const NEREID_CODES = new Set([
  'NOT_FOUND',
  'INVALID_ARG',
  'UNAVAILABLE',
  'UNSUPPORTED',
  'ALREADY_EXISTS',
  'CANCELLED',
  'INTERNAL',
  'UNKNOWN',
]);

/**
 * gRPC transport errors may be INTERNAL where gRPC's own spec says so (doc/statuscodes.md: "Could not
 * decompress" and protocol violations such as a bad frame header are INTERNAL in every gRPC library).
 */
const GRPC_TRANSPORT_INTERNAL = [
  /^invalid gRPC message compression flag \d+$/,
  /^failed to decompress a '(gzip|deflate)' message/,
  /^compressed message without a grpc-encoding$/,
];

/** Why an error thrown by a decoder breaks a property, or undefined when it is a clean refusal. */
export function refusalProblem(err: unknown, allowedInternal: readonly RegExp[] = []): string | undefined {
  if (err instanceof NereidError) {
    if (!NEREID_CODES.has(err.code)) return `NereidError with an unknown code '${String(err.code)}'`;
    if (err.code === 'INTERNAL' && !allowedInternal.some((re) => re.test(err.message))) {
      return `INTERNAL error for client input: ${err.message}`;
    }
    if (err.code === 'UNKNOWN') return `UNKNOWN error for client input: ${err.message}`;
    if (err.message === '') return `NereidError ${err.code} without a message`;
    return undefined;
  }
  if (err instanceof GrpcStatusError) {
    if (err.code === Status.OK) return 'GrpcStatusError with status OK';
    if (err.code === Status.UNKNOWN) return `UNKNOWN gRPC status: ${err.message}`;
    if (err.code === Status.INTERNAL && !GRPC_TRANSPORT_INTERNAL.some((re) => re.test(err.message))) {
      return `INTERNAL gRPC status for client input: ${err.message}`;
    }
    return undefined;
  }
  const e = err as Error | undefined;
  return `crash: ${e?.name ?? typeof err}: ${e?.message ?? String(err)}${e?.stack ? `\n${e.stack}` : ''}`;
}

export function outcomeOf(err: unknown): string {
  if (err instanceof NereidError) return err.code;
  if (err instanceof GrpcStatusError) return `grpc:${err.code}`;
  return 'crash';
}

/** What one target's run produced. */
export interface TargetReport {
  readonly name: string;
  readonly cases: number;
  readonly seed: number;
  /** Decoder calls that accepted / refused (by code) their input. */
  readonly outcomes: ReadonlyMap<string, number>;
  readonly notes: ReadonlyMap<string, number>;
  /** fast-check's report when a property failed (with the shrunk counterexample and how to replay it). */
  readonly failure?: string;
  readonly interrupted: boolean;
}

export interface RunOptions {
  readonly numRuns: number;
  readonly seed: number;
  /** Watchdog of an asynchronous case (ms): a promise still pending after this long is a hang. */
  readonly caseTimeoutMs: number;
  /** Stop the whole target after this long (the cases run so far still count). */
  readonly timeLimitMs?: number;
  /** Replays one counterexample (fast-check's `path`). */
  readonly path?: string;
  /** Called after each case (the nightly runner's heartbeat). */
  readonly onCase?: () => void;
  /** Called once the target's setup is done, before the first case (the runner starts its hang watch). */
  readonly onReady?: () => void;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** Runs `t` as a fast-check property; never throws, reports instead. */
export async function runTarget<T>(t: FuzzTarget<T>, options: RunOptions): Promise<TargetReport> {
  const outcomes = new Map<string, number>();
  const notes = new Map<string, number>();
  let cases = 0;
  const allowed = t.allowedInternal ?? [];

  const ctx: CaseContext = {
    attempt<R>(what: string, fn: () => R): R | undefined {
      let result: R;
      try {
        result = fn();
      } catch (err) {
        const problem = refusalProblem(err, allowed);
        if (problem !== undefined) throw new FuzzFailure(`${what}: ${problem}`, { cause: err });
        bump(outcomes, outcomeOf(err));
        return undefined;
      }
      bump(outcomes, 'accepted');
      return result;
    },
    async attemptAsync<R>(what: string, fn: () => Promise<R>): Promise<R | undefined> {
      let result: R;
      try {
        result = await fn();
      } catch (err) {
        const problem = refusalProblem(err, allowed);
        if (problem !== undefined) throw new FuzzFailure(`${what}: ${problem}`, { cause: err });
        bump(outcomes, outcomeOf(err));
        return undefined;
      }
      bump(outcomes, 'accepted');
      return result;
    },
    note: (event) => bump(notes, event),
  };

  const runCase = async (input: T): Promise<void> => {
    cases++;
    let timer: NodeJS.Timeout | undefined;
    try {
      const result = t.run(input, ctx);
      if (result instanceof Promise) {
        const watchdog = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new FuzzFailure(`hang: the case did not finish within ${options.caseTimeoutMs} ms`)),
            options.caseTimeoutMs,
          );
        });
        await Promise.race([result, watchdog]);
      }
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      options.onCase?.();
    }
    // A case that finished is not a hang however long it took (a loaded machine can stall any case), so
    // there is no check of the elapsed time here: only the watchdog above and the nightly heartbeat judge.
  };

  await t.setup?.();
  options.onReady?.();
  let details: fc.RunDetails<[T]>;
  try {
    details = await fc.check(fc.asyncProperty(t.arbitrary, runCase), {
      numRuns: options.numRuns,
      seed: options.seed,
      ...(options.path !== undefined && { path: options.path }),
      ...(options.timeLimitMs !== undefined && {
        interruptAfterTimeLimit: options.timeLimitMs,
        markInterruptAsFailure: false,
      }),
    });
  } finally {
    await t.teardown?.();
  }
  return {
    name: t.name,
    // Generated cases (shrinking re-runs of a failing one are not counted).
    cases: Math.min(details.numRuns, cases),
    seed: options.seed,
    outcomes,
    notes,
    interrupted: details.interrupted,
    ...(details.failed && {
      failure:
        `${fc.defaultReportMessage(details)}\n${errorText(details.errorInstance)}\n` +
        `replay: --target=${t.name} --seed=${details.seed} --path=${details.counterexamplePath ?? ''}`,
    }),
  };
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return `error: ${String(err)}`;
  const cause = err.cause instanceof Error ? `\ncaused by: ${err.cause.stack ?? err.cause.message}` : '';
  return `error: ${err.stack ?? err.message}${cause}`;
}

/** One line per target: cases and outcomes. */
export function formatReport(r: TargetReport): string {
  const parts = [...r.outcomes.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`);
  const notes = [...r.notes.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`);
  return (
    `${r.name.padEnd(26)} ${String(r.cases).padStart(7)} cases  ${r.failure ? 'FAILED' : 'ok'}` +
    `${r.interrupted ? ' (time limit reached)' : ''}  [${parts.join(', ')}]` +
    (notes.length > 0 ? `  {${notes.join(', ')}}` : '')
  );
}
