import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeLogMessage, Logger } from '../common/logger.js';
import {
  MAX_MODEL_MESSAGE,
  capModelText,
  MAX_STACKS_PER_INTERVAL,
  ModelErrorLog,
  SUMMARY_INTERVAL_MS,
  modelFailureText,
  parseV8Stack,
  pythonFrames,
  userFrames,
  type ModelFailure,
} from './model-errors.js';
import { OutputCheck } from './output-check.js';

const STACK = [
  "TypeError: Cannot read properties of undefined (reading 'value')",
  '    at lookup (file:///srv/repo/m/1/helper.ts:4:21)',
  '    at file:///srv/repo/m/1/model.ts:12:60',
  '    at Array.map (<anonymous>)',
  '    at Model.execute (file:///srv/repo/m/1/model.ts:8:21)',
  '    at execute (file:///opt/nereid/dist/src/backends/javascript/worker/main.js:216:30)',
  '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
  '    at lib (/srv/repo/m/node_modules/lib/index.js:1:1)',
].join('\n');

describe('model-errors', () => {
  it('finds the innermost frame in the model folder, skipping node internals, Nereid and libraries', () => {
    const frames = parseV8Stack(STACK);
    assert.equal(frames.length, 5, 'node:internal and <anonymous> frames are not files');
    const mine = userFrames(frames, ['/srv/repo/m'], 'javascript');
    assert.deepEqual(
      mine.map((f) => f.text),
      ['1/helper.ts:4:21', '1/model.ts:12:60', '1/model.ts:8:21'],
    );
    assert.equal(userFrames(frames, ['/elsewhere'], 'javascript').length, 0);
  });

  it('reads Python frames and writes them as Python tracebacks do', () => {
    const frames = pythonFrames([
      ['/srv/repo/m/1/helper.py', 7, 'lookup'],
      ['/usr/lib/python3/dist-packages/numpy/core.py', 3, 'f'],
      ['/srv/repo/m/1/model.py', 20, 'execute'],
      'junk',
    ]);
    const mine = userFrames(frames, ['/srv/repo/m'], 'python');
    assert.deepEqual(
      mine.map((f) => f.text),
      ['1/helper.py(7)', '1/model.py(20)'],
    );
  });

  it('formats one line: model, version, instance, hook, user frame, the error', () => {
    const [where] = userFrames(parseV8Stack(STACK), ['/srv/repo/m'], 'javascript');
    assert.equal(
      modelFailureText({ model: 'm', version: 1, instance: 'm_0' }, 'execute', 'TypeError: x', where),
      "model 'm' version 1 instance 'm_0': execute() failed at 1/helper.ts:4:21: TypeError: x",
    );
    assert.equal(
      modelFailureText({ model: 'm', version: 2 }, 'build', 'Unexpected ";"', undefined),
      'model \'m\' version 2: TypeScript build failed: Unexpected ";"',
    );
  });

  describe('ModelErrorLog', () => {
    const setup = () => {
      const lines: string[] = [];
      let now = 1_000_000;
      const log = new ModelErrorLog({
        log: new Logger({}, (l) => lines.push(decodeLogMessage(l))),
        now: () => now,
      });
      const failure = (message: string): ModelFailure => ({
        id: { model: 'm', version: 1, instance: 'm_0' },
        phase: 'execute',
        message,
        where: undefined,
        headline: `model 'm' version 1 instance 'm_0': execute() failed: ${message}`,
        stack: `Error: ${message}\n    at x (/srv/m/1/model.js:1:1)`,
      });
      return { lines, log, failure, advance: (ms: number) => (now += ms) };
    };

    it('writes the stack the first time, counts repeats, summarises them at most once per interval', () => {
      const { lines, log, failure, advance } = setup();
      log.report(failure('boom'));
      assert.equal(lines.length, 1);
      assert.match(lines[0], /^E.*execute\(\) failed: boom\nError: boom\n {4}at x/);
      for (let i = 0; i < 5; i++) log.report(failure('boom'));
      assert.equal(lines.length, 1, 'repeats within the interval are only counted');
      advance(SUMMARY_INTERVAL_MS);
      log.report(failure('boom'));
      assert.equal(lines.length, 2);
      assert.match(
        lines[1],
        /failed: boom \[repeated 6 more time\(s\) in the last 60 s; the stack was logged/,
      );
      assert.ok(!lines[1].includes('\n'), 'a summary is one line');
      log.report(failure('boom'));
      log.flush();
      assert.match(lines[2], /repeated 1 more time/);
      log.flush();
      assert.equal(lines.length, 3, 'nothing owed, nothing written');
    });

    it('writes at most MAX_STACKS_PER_INTERVAL distinct stacks per interval, then counts the rest', () => {
      const { lines, log, failure, advance } = setup();
      for (let i = 0; i < MAX_STACKS_PER_INTERVAL + 5; i++) log.report(failure(`value ${i}`));
      assert.equal(lines.length, MAX_STACKS_PER_INTERVAL);
      advance(SUMMARY_INTERVAL_MS);
      log.report(failure('later'));
      assert.match(
        lines[MAX_STACKS_PER_INTERVAL],
        /5 more distinct error\(s\) in the last interval were not logged/,
      );
      assert.match(lines[MAX_STACKS_PER_INTERVAL + 1], /failed: later\n/);
    });
  });

  describe('OutputCheck', () => {
    const check = (strict: boolean, decoupled = false) => {
      const lines: string[] = [];
      const c = new OutputCheck({
        model: 'm',
        version: 3,
        declared: new Set(['A', 'B']),
        decoupled,
        strict,
        log: new Logger({}, (l) => lines.push(l)),
      });
      return { c, lines };
    };
    const t = (...names: string[]) => names.map((name) => ({ name }));

    it('warns once per output name and model version; nothing when all is well', () => {
      const { c, lines } = check(false);
      assert.equal(c.check(t('A', 'B'), undefined, new Set(['A', 'B'])), undefined);
      assert.equal(lines.length, 0);
      assert.equal(c.check(t('A', 'B'), ['C'], new Set(['A', 'B'])), undefined);
      assert.equal(c.check(t('A', 'B'), ['C'], new Set(['A', 'B'])), undefined);
      assert.equal(lines.length, 1);
      assert.match(
        lines[0],
        /^W.*model 'm' version 3 returned output 'C', which its config does not declare \(declared: 'A', 'B'\)/,
      );
      assert.equal(c.check(t('A'), undefined, new Set(['A', 'B'])), undefined);
      assert.equal(c.check(t('A'), undefined, new Set(['A', 'B'])), undefined);
      assert.equal(lines.length, 2);
      assert.match(lines[1], /returned no output 'B', which the request asked for/);
    });

    it('fails with INTERNAL in strict mode; a decoupled model may leave outputs out', () => {
      const { c, lines } = check(true);
      assert.equal(c.check(t('A', 'C'), undefined, new Set(['A']))?.code, 'INTERNAL');
      assert.match(
        c.check(t('A'), undefined, new Set(['A', 'B']))!.message,
        /\(--strict-model-outputs=true\)$/,
      );
      assert.equal(lines.length, 0, 'the error replaces the warning');
      const decoupled = check(true, true);
      assert.equal(decoupled.c.check(t(), undefined, new Set(['A', 'B'])), undefined);
      assert.equal(decoupled.c.check(t('Z'), undefined, new Set(['A']))?.code, 'INTERNAL');
    });
  });
});

describe('capModelText', () => {
  it('keeps short text, cuts long text at the cap and says how much was cut', () => {
    assert.equal(capModelText('short'), 'short');
    const long = capModelText('z'.repeat(MAX_MODEL_MESSAGE + 500));
    assert.ok(long.startsWith('z'.repeat(MAX_MODEL_MESSAGE)));
    assert.ok(long.endsWith('... [500 more characters cut]'), long.slice(-40));
    assert.ok(long.length < MAX_MODEL_MESSAGE + 64);
  });
});
