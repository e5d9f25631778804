import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { PreciseTimers } from './precise-timer.js';

const MS = 1_000_000n;
const timers = new PreciseTimers();
const now = (): bigint => process.hrtime.bigint();

/** Sets one timer and resolves with how late it fired, in ns (negative: early). */
function lateness(set: (cb: () => void, delayNs: bigint) => unknown, delayNs: bigint): Promise<bigint> {
  return new Promise((resolve) => {
    const due = now() + delayNs;
    set(() => resolve(now() - due), delayNs);
  });
}

const median = (xs: bigint[]): number =>
  Number([...xs].sort((a, b) => (a < b ? -1 : 1))[xs.length >> 1]) / 1e6;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('timers never fire before they are due, short, coarse and zero alike', async () => {
  const delays = [0n, 1n, 100_000n, 500_000n, 1n * MS, 2n * MS, 3n * MS, 4n * MS, 5n * MS, 7_300_000n];
  const late = await Promise.all(
    delays.flatMap((d) => [lateness((c, n) => timers.set(c, n), d), lateness((c, n) => timers.set(c, n), d)]),
  );
  for (const l of late) assert.ok(l >= 0n, `fired ${l} ns early`);
});

/** Holds the thread for up to 1 ms, so timers start at any point of Node's millisecond clock. */
function randomPhase(): void {
  const until = now() + BigInt(Math.floor(Math.random() * 1e6));
  while (now() < until);
}

test('200 sequential 2 ms timers are late by well under a millisecond at the median', async (t) => {
  await lateness((c, n) => timers.set(c, n), 2n * MS); // the worker is up after this one
  const precise: bigint[] = [];
  const plain: bigint[] = [];
  for (let i = 0; i < 200; i++) {
    randomPhase();
    precise.push(await lateness((c, n) => timers.set(c, n), 2n * MS));
    randomPhase();
    plain.push(await lateness((c, n) => setTimeout(c, Number(n / MS)), 2n * MS));
  }
  const p = median(precise).toFixed(3);
  const early = plain.filter((l) => l < 0n);
  const earliest = Number(early.reduce((a, b) => (b < a ? b : a), 0n)) / 1e6;
  t.diagnostic(
    `median lateness of a 2 ms timer: precise ${p} ms; setTimeout ${median(plain).toFixed(3)} ms, ` +
      `with ${early.length}/${plain.length} early (by up to ${-earliest} ms)`,
  );
  assert.ok(precise.every((l) => l >= 0n));
  assert.ok(median(precise) < 0.5, `median ${p} ms`);
});

test('timers fire in the order of their due times; a callback may set another', async () => {
  const fired: string[] = [];
  await new Promise<void>((done) => {
    timers.set(() => fired.push('3ms'), 3n * MS);
    timers.set(() => fired.push('6ms'), 6n * MS);
    timers.set(() => fired.push('1ms'), 1n * MS);
    timers.set(() => {
      fired.push('2ms');
      timers.set(() => fired.push('nested'), 500_000n);
    }, 2n * MS);
    timers.set(() => fired.push('2ms, set later'), 2n * MS);
    timers.set(() => {
      fired.push('8ms');
      done();
    }, 8n * MS);
  });
  // When the nested one fires depends on how late its parent was; it only has to come after it.
  const nested = fired.indexOf('nested');
  assert.ok(nested > fired.indexOf('2ms'));
  fired.splice(nested, 1);
  assert.deepEqual(fired, ['1ms', '2ms', '2ms, set later', '3ms', '6ms', '8ms']);
});

test('a cancelled timer never fires; cancelling the earliest publishes the next one', async () => {
  const fired: string[] = [];
  const cancelA = timers.set(() => fired.push('a'), 2n * MS);
  const publishedA = timers.publishedDue;
  assert.notEqual(publishedA, undefined);
  const dueB = now() + 3n * MS;
  const cancelB = timers.set(() => fired.push('b'), 3n * MS);
  assert.equal(timers.publishedDue, publishedA, 'a later timer leaves the published due alone');
  const cancelC = timers.set(() => fired.push('c'), 1n * MS);
  const cancelZero = timers.set(() => fired.push('zero'), 0n);
  const cancelCoarse = timers.set(() => fired.push('coarse'), 10n * MS);
  assert.ok(timers.publishedDue! < publishedA!, 'a sooner timer is published');
  cancelC();
  assert.equal(timers.publishedDue, publishedA, 'cancelling the earliest publishes the next');
  cancelA();
  cancelA();
  const published = timers.publishedDue!;
  assert.ok(published >= dueB && published - dueB < MS, 'b is published once a is cancelled');
  cancelB();
  assert.equal(timers.publishedDue, undefined, 'nothing left to publish');
  cancelZero();
  cancelCoarse();
  await new Promise((resolve) => timers.set(() => resolve(fired.push('d')), 4n * MS));
  await sleep(20); // past every cancelled timer's due time
  assert.deepEqual(fired, ['d']);
});

test('without a worker, timers still fire, never early', async () => {
  const broken = new PreciseTimers(new URL('./no-such-worker.js', import.meta.url));
  const late: bigint[] = [];
  for (let i = 0; i < 5; i++) late.push(await lateness((c, n) => broken.set(c, n), 2n * MS));
  assert.equal(broken.publishedDue, undefined);
  for (const l of late) assert.ok(l >= 0n && l < 200n * MS, `lateness ${l} ns`);

  const closing = new PreciseTimers();
  const pending = lateness((c, n) => closing.set(c, n), 3n * MS);
  await closing.close();
  assert.ok((await pending) >= 0n);
  assert.ok((await lateness((c, n) => closing.set(c, n), 1n * MS)) >= 0n);
});

/** Runs a module snippet with `timers` imported; resolves with its stdout and how long it lived. */
function child(body: string): Promise<{ out: string; code: number | null; ms: number }> {
  const url = new URL('./precise-timer.js', import.meta.url).href;
  const source = `import { setPreciseTimer as set } from ${JSON.stringify(url)};\n${body}`;
  const started = Date.now();
  const proc = spawn(process.execPath, ['--input-type=module', '-e', source], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout.on('data', (b: Buffer) => (out += b.toString()));
  const kill = setTimeout(() => proc.kill('SIGKILL'), 15_000);
  return new Promise((resolve) => {
    proc.on('exit', (code) => {
      clearTimeout(kill);
      resolve({ out, code, ms: Date.now() - started });
    });
  });
}

test('the worker never holds the process open, and a pending timer does', async () => {
  const [idle, pending] = await Promise.all([
    // Fires timers until the worker is surely up and waiting, then leaves nothing pending.
    child(`
      let n = 0;
      const again = () => { if (++n < 40) set(again, 2_000_000n); else set(() => console.log('never'), 2_000_000n)(); };
      again();
    `),
    child(`set(() => console.log('fired'), 300_000_000n);`),
  ]);
  assert.equal(idle.code, 0);
  assert.equal(idle.out, '');
  assert.ok(idle.ms < 5_000, `exited after ${idle.ms} ms`);
  assert.equal(pending.code, 0);
  assert.equal(pending.out, 'fired\n');
});
