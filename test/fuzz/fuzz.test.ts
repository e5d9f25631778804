// The fuzzing suite's quick run (`npm test`): every target with a fixed seed and a few thousand cases in
// all; the nightly run (`npm run fuzz`, scripts/fuzz.sh) takes 100,000+ with a fresh seed. A failure prints
// fast-check's shrunk counterexample and the command that replays it. FUZZ_SEED / FUZZ_CASES override.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { formatReport, runTarget } from './harness.js';
import { ALL_TARGETS, shareCases, stopLiveServer } from './targets/index.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_231_123);
const TOTAL = Number(process.env.FUZZ_CASES ?? 3_000);
const cases = shareCases(TOTAL, ALL_TARGETS);

describe(`fuzzing (seed ${SEED}, ${TOTAL} cases)`, () => {
  after(() => stopLiveServer());
  for (const t of ALL_TARGETS) {
    it(`${t.name}: ${t.what}`, { timeout: 300_000 }, async () => {
      const report = await runTarget(t, { numRuns: cases.get(t.name)!, seed: SEED, caseTimeoutMs: 120_000 });
      console.log(formatReport(report));
      assert.equal(report.failure, undefined, report.failure);
      assert.equal(report.cases, cases.get(t.name), 'every generated case ran');
    });
  }
});
