/**
 * The nightly fuzz run (`npm run fuzz`, scripts/fuzz.sh): every target, 100,000 generated cases in all by
 * default, each target in its own worker thread so a case that never returns (a synchronous hang) is
 * caught by a heartbeat and reported instead of freezing the run. Prints one line per target (cases,
 * outcomes by error code) and the totals; exits 1 on any crash, internal error, hang or broken round-trip,
 * printing the shrunk counterexample and the command that replays it.
 *
 *   node dist/test/fuzz/run.js [--cases=100000] [--seed=N] [--target=a,b] [--path=P] [--hang-seconds=120]
 */
import { Worker } from 'node:worker_threads';
import { parseArgs } from 'node:util';
import type { TargetReport } from './harness.js';
import { formatReport } from './harness.js';
import { ALL_TARGETS, shareCases } from './targets/index.js';
import type { WorkerInput, WorkerOutput } from './worker.js';

const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '100000' },
    seed: { type: 'string' },
    target: { type: 'string' },
    path: { type: 'string' },
    'hang-seconds': { type: 'string', default: '120' },
    'case-timeout-ms': { type: 'string', default: '120000' },
  },
});

const total = Number(values.cases);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const hangMs = Number(values['hang-seconds']) * 1000;
const wanted = values.target?.split(',').filter((t) => t !== '');
const targets = wanted ? ALL_TARGETS.filter((t) => wanted.includes(t.name)) : ALL_TARGETS;
if (wanted && targets.length !== wanted.length) {
  console.error(`unknown target in '${values.target}'; known: ${ALL_TARGETS.map((t) => t.name).join(', ')}`);
  process.exit(2);
}
const cases = shareCases(total, targets);

function runInWorker(name: string, numRuns: number): Promise<TargetReport> {
  const heartbeat = new Int32Array(new SharedArrayBuffer(8));
  const input: WorkerInput = {
    target: name,
    numRuns,
    seed,
    caseTimeoutMs: Number(values['case-timeout-ms']),
    heartbeat,
    ...(values.path !== undefined && { path: values.path }),
  };
  const worker = new Worker(new URL('./worker.js', import.meta.url), { workerData: input });
  return new Promise((resolve) => {
    let last = -1;
    let lastChange = Date.now();
    const watch = setInterval(() => {
      const now = Atomics.load(heartbeat, 0);
      // Loading the targets and a target's setup (a live server) are not cases: on a loaded machine they
      // can take longer than the hang limit, so the watch starts with the first case.
      if (Atomics.load(heartbeat, 1) === 0) {
        lastChange = Date.now();
        return;
      }
      if (now !== last) {
        last = now;
        lastChange = Date.now();
        return;
      }
      if (Date.now() - lastChange < hangMs) return;
      clearInterval(watch);
      void worker.terminate();
      resolve({
        name,
        cases: now,
        seed,
        outcomes: new Map(),
        notes: new Map(),
        interrupted: false,
        failure:
          `hang: no case finished for ${hangMs / 1000} s after case ${now} (seed ${seed}); replay with ` +
          `--target=${name} --seed=${seed} --cases=${now + 1}`,
      });
    }, 1000);
    worker.once('message', (out: WorkerOutput) => {
      clearInterval(watch);
      resolve({ ...out, outcomes: new Map(out.outcomes), notes: new Map(out.notes) });
      void worker.terminate();
    });
    worker.once('error', (err) => {
      clearInterval(watch);
      resolve({
        name,
        cases: Atomics.load(heartbeat, 0),
        seed,
        outcomes: new Map(),
        notes: new Map(),
        interrupted: false,
        failure: `the worker died: ${err.stack ?? err.message}`,
      });
    });
  });
}

const started = Date.now();
console.log(`fuzzing ${targets.length} targets, ${total} cases, seed ${seed}`);
const reports: TargetReport[] = [];
for (const t of targets) {
  const report = await runInWorker(t.name, cases.get(t.name)!);
  reports.push(report);
  console.log(formatReport(report));
  if (report.failure !== undefined) console.log(report.failure);
}
const ran = reports.reduce((n, r) => n + r.cases, 0);
const failed = reports.filter((r) => r.failure !== undefined);
console.log(
  `\n${ran} cases in ${Math.round((Date.now() - started) / 1000)} s, seed ${seed}: ` +
    (failed.length === 0
      ? '0 crashes, 0 hangs, 0 internal errors'
      : `${failed.length} target(s) FAILED: ${failed.map((r) => r.name).join(', ')}`),
);
process.exit(failed.length === 0 ? 0 : 1);
