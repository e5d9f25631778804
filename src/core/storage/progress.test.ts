import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DownloadProgress, formatBytes } from './progress.js';

test('a download says what is coming, then bytes so far with share and rate, then the total and time', () => {
  const lines: string[] = [];
  let t = 1000;
  const p = new DownloadProgress(
    "'s3://bucket/models/big'",
    40 * 1024 ** 2,
    3,
    (l) => lines.push(l),
    0,
    () => t,
  );
  assert.deepEqual(lines, ["downloading 's3://bucket/models/big': 3 files, 40.0 MiB"]);
  p.add(10 * 1024 ** 2);
  t += 2000;
  p.report();
  assert.equal(lines[1], "downloading 's3://bucket/models/big': 10.0 MiB of 40.0 MiB (25%), 5.00 MiB/s");
  p.add(30 * 1024 ** 2);
  t += 2000;
  p.finish();
  assert.equal(lines[2], "downloaded 's3://bucket/models/big': 40.0 MiB in 4.0 s, 10.0 MiB/s");
  assert.equal(lines.length, 3);
});

test('the periodic line comes from a timer that stops with the download', async () => {
  const lines: string[] = [];
  const p = new DownloadProgress('m', 100, 1, (l) => lines.push(l), 5);
  p.add(50);
  await new Promise((r) => setTimeout(r, 60));
  const during = lines.length;
  assert.ok(during >= 2, `at least one periodic line arrived: ${JSON.stringify(lines)}`);
  assert.match(lines[1], /^downloading m: 50 B of 100 B \(50%\), /);
  p.stop();
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(lines.length, during, 'no line after stop()');
});

test('formatBytes picks the unit a person reads at a glance', () => {
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(3.4 * 1024), '3.40 KiB');
  assert.equal(formatBytes(12 * 1024 ** 2), '12.0 MiB');
  assert.equal(formatBytes(1.5 * 1024 ** 3), '1.50 GiB');
});
