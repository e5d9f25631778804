/**
 * One fuzz target in a worker thread, for the nightly runner (run.ts): runs it, says when its setup is done
 * and bumps the shared heartbeat after every case so the runner can tell a hang from a slow target, and
 * posts the report back.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { runTarget } from './harness.js';
import { ALL_TARGETS, stopLiveServer } from './targets/index.js';

export interface WorkerInput {
  readonly target: string;
  readonly numRuns: number;
  readonly seed: number;
  readonly caseTimeoutMs: number;
  readonly path?: string;
  /**
   * Read by the runner: [0] the cases finished so far; [1] 1 once the worker has loaded the targets and
   * run the target's setup (before that, a slow start on a loaded machine is not a hang).
   */
  readonly heartbeat: Int32Array;
}

export interface WorkerOutput {
  readonly name: string;
  readonly cases: number;
  readonly seed: number;
  readonly outcomes: [string, number][];
  readonly notes: [string, number][];
  readonly failure?: string;
  readonly interrupted: boolean;
}

if (parentPort !== null) {
  const input = workerData as WorkerInput;
  const t = ALL_TARGETS.find((x) => x.name === input.target);
  if (t === undefined) throw new Error(`no fuzz target '${input.target}'`);
  const report = await runTarget(t, {
    numRuns: input.numRuns,
    seed: input.seed,
    caseTimeoutMs: input.caseTimeoutMs,
    ...(input.path !== undefined && { path: input.path }),
    onCase: () => Atomics.add(input.heartbeat, 0, 1),
    onReady: () => Atomics.store(input.heartbeat, 1, 1),
  });
  await stopLiveServer();
  const out: WorkerOutput = {
    ...report,
    outcomes: [...report.outcomes.entries()],
    notes: [...report.notes.entries()],
  };
  parentPort.postMessage(out);
}
