import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { formatLogLine, Logger } from './logger.js';

// Lines the real Triton 2.51.0 (.venv-triton, scripts/setup-triton.sh) wrote at start-up, run with
// TZ=Pacific/Kiritimati (UTC+14: its local date was already the next day) and with --log-format=ISO8601.
const TRITON_DEFAULT = 'I1202 16:11:23.057629 8304 cuda_memory_manager.cc:117] "CUDA memory pool disabled"';
const TRITON_ISO8601 = '2026-12-02T16:11:43Z I 9180 cuda_memory_manager.cc:117] "CUDA memory pool disabled"';

// How a parser of Triton's logs reads a line (the shape logging.cc writes): one regex per format.
const DEFAULT_LINE = /^([IWE])(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6}) (\d+) ([^\s:]+):(\d+)\] (.*)$/;
const ISO8601_LINE =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z ([IWE]) (\d+) ([^\s:]+):(\d+)\] (.*)$/;

function lines(format: 'default' | 'ISO8601' | 'json'): { log: Logger; out: string[] } {
  const out: string[] = [];
  return { log: new Logger({ logFormat: format }, (l) => out.push(l)), out };
}

/** The 1-based line of this test file's source holding `marker`. */
function sourceLine(marker: string): number {
  const source = readFileSync(
    fileURLToPath(import.meta.url).replace(/dist\/(src\/.*)\.js$/, '$1.ts'),
    'utf8',
  );
  const index = source.split('\n').findIndex((l) => l.includes(marker) && !l.includes('sourceLine('));
  assert.ok(index >= 0, `marker ${marker} not found`);
  return index + 1;
}

test('the default format parses with the regex that parses a recorded Triton line, field for field', () => {
  const triton = DEFAULT_LINE.exec(TRITON_DEFAULT);
  assert.ok(triton, 'the regex parses Triton');
  assert.deepEqual(triton.slice(1), [
    'I',
    '12',
    '02',
    '16',
    '11',
    '23',
    '057629',
    '8304',
    'cuda_memory_manager.cc',
    '117',
    '"CUDA memory pool disabled"',
  ]);

  const { log, out } = lines('default');
  log.warn('model "a" has "b"\nsecond line'); // LOG-DEFAULT
  assert.equal(out.length, 1);
  const ours = DEFAULT_LINE.exec(out[0]);
  assert.ok(ours, `the regex parses Nereid's line: ${out[0]}`);
  assert.equal(ours[1], 'W');
  assert.equal(Number(ours[8]), process.pid);
  assert.equal(ours[9], 'logger.test.ts', 'the TypeScript source file, as Triton names its .cc file');
  assert.equal(Number(ours[10]), sourceLine('LOG-DEFAULT'));
  // JSON-encoded as Triton's messages are: one line, quotes escaped, and decodable back.
  assert.equal(JSON.parse(ours[11]), 'model "a" has "b"\nsecond line');
});

test('ISO8601 parses with the regex that parses a recorded Triton ISO8601 line', () => {
  const triton = ISO8601_LINE.exec(TRITON_ISO8601);
  assert.ok(triton);
  assert.deepEqual(triton.slice(7, 11), ['I', '9180', 'cuda_memory_manager.cc', '117']);
  const { log, out } = lines('ISO8601');
  log.error('boom'); // LOG-ISO
  const ours = ISO8601_LINE.exec(out[0]);
  assert.ok(ours, out[0]);
  assert.deepEqual(ours.slice(7, 12), [
    'E',
    String(process.pid),
    'logger.test.ts',
    String(sourceLine('LOG-ISO')),
    '"boom"',
  ]);
});

test('json is one object a line with the time to the microsecond', () => {
  const { log, out } = lines('json');
  log.verbose('v', 0); // LOG-JSON
  const doc = JSON.parse(out[0]) as Record<string, unknown>;
  assert.deepEqual(Object.keys(doc), ['time', 'severity', 'pid', 'file', 'line', 'message']);
  assert.match(String(doc.time), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  assert.deepEqual(
    [doc.severity, doc.pid, doc.file, doc.line, doc.message],
    ['INFO', process.pid, 'logger.test.ts', sourceLine('LOG-JSON'), 'v'],
  );
});

test('formatLogLine: microseconds, padded fields, and no escaping when asked', () => {
  const micros = Date.UTC(2026, 0, 5, 3, 4, 5) * 1000 + 42;
  assert.equal(
    formatLogLine('default', 'I', micros, 7, 'a.ts', 9, 'hi', false),
    'I0105 03:04:05.000042 7 a.ts:9] hi',
  );
  assert.equal(
    formatLogLine('ISO8601', 'W', micros, 7, 'a.ts', 9, 'hi', true),
    '2026-01-05T03:04:05Z W 7 a.ts:9] "hi"',
  );
  assert.equal(
    (JSON.parse(formatLogLine('json', 'E', micros, 7, 'a.ts', 9, 'hi', true)) as { time: string }).time,
    '2026-01-05T03:04:05.000042Z',
  );
});

test('the date is UTC like the time, with TZ far from UTC (UTC+14 and UTC-11)', () => {
  // 18:46 UTC on 1 December is 08:46 on 2 December in Kiritimati and 07:46 on 1 December in Pago Pago;
  // 23:30 UTC on 31 December is already 1 January in Kiritimati.
  const script = `
    import { formatLogLine, Logger } from ${JSON.stringify(new URL('./logger.js', import.meta.url).href)};
    const at = (iso) => Date.parse(iso) * 1000 + 714123;
    const out = [];
    new Logger({}, (l) => out.push(l)).info('now');
    console.log(JSON.stringify([
      formatLogLine('default', 'I', at('2026-12-01T18:46:09Z'), 1, 'f.ts', 1, 'm', true),
      formatLogLine('default', 'I', at('2026-12-31T23:30:00Z'), 1, 'f.ts', 1, 'm', true),
      formatLogLine('ISO8601', 'I', at('2026-12-31T23:30:00Z'), 1, 'f.ts', 1, 'm', true),
      new Date().getDate(), out[0],
    ]));`;
  for (const tz of ['Pacific/Kiritimati', 'Pacific/Pago_Pago']) {
    const before = new Date();
    const [a, b, c, , live] = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        env: { ...process.env, TZ: tz },
        encoding: 'utf8',
      }),
    ) as string[];
    const after = new Date();
    assert.equal(a, 'I1201 18:46:09.714123 1 f.ts:1] "m"', tz);
    assert.equal(b, 'I1231 23:30:00.714123 1 f.ts:1] "m"', tz);
    assert.equal(c, '2026-12-31T23:30:00Z I 1 f.ts:1] "m"', tz);
    // The live line's month and day are today's in UTC (either side of the call, in case midnight fell between).
    const utcDay = (d: Date): string =>
      `${String(d.getUTCMonth() + 1).padStart(2, '0')}${String(d.getUTCDate()).padStart(2, '0')}`;
    assert.ok([utcDay(before), utcDay(after)].includes(live.slice(1, 5)), `${tz}: ${live}`);
  }
});

test('TRITON_SERVER_ESCAPE_LOG_MESSAGES=0 writes messages as they are, as in Triton', () => {
  const script = `
    import { Logger } from ${JSON.stringify(new URL('./logger.js', import.meta.url).href)};
    new Logger({}, (l) => console.log(l)).info('say "hi"');`;
  const line = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, TRITON_SERVER_ESCAPE_LOG_MESSAGES: '0' },
    encoding: 'utf8',
  }).trim();
  const m = DEFAULT_LINE.exec(line);
  assert.ok(m, line);
  assert.equal(m[11], 'say "hi"');
});
