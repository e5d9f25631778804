import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { parseModelConfigText } from '../../model-config/index.js';
import { instanceClaimsOf, RateLimiter, type InstanceClaim, type RateLimitTicket } from './rate-limiter.js';

function claim(resources: [string, number, boolean?][], priority = 0, device = 0): InstanceClaim {
  return {
    resources: resources.map(([name, count, global]) => ({ name, count, global: global === true })),
    priority,
    device,
  };
}

/** Requests a turn and records grants into `log` under `label`. */
function ask(t: RateLimitTicket, log: string[], label: string): void {
  t.request(() => log.push(label));
}

const limitsOf = (rl: RateLimiter): Record<string, Record<string, number>> =>
  Object.fromEntries([...rl.resourceLimits()].map(([d, m]) => [d, Object.fromEntries(m)]));

test('rate limiter: default counts are the largest any instance needs (rate_limiter.md example)', () => {
  const rl = new RateLimiter();
  rl.register([
    claim([
      ['R1', 4],
      ['R2', 4],
    ]),
    claim([
      ['R2', 5],
      ['R3', 10],
      ['R4', 5],
    ]),
    claim([
      ['R1', 1],
      ['R3', 7],
      ['R4', 2],
    ]),
  ]);
  assert.deepEqual(limitsOf(rl), { '0': { R1: 4, R2: 5, R3: 10, R4: 5 } });
});

test('rate limiter: explicit counts per device and global (rate_limiter.md example)', () => {
  const rl = new RateLimiter([
    { name: 'R1', count: 10, device: -1 },
    { name: 'R2', count: 5, device: 0 },
    { name: 'R2', count: 8, device: 1 },
    { name: 'R3', count: 2, device: 0 },
  ]);
  rl.register([claim([['R1', 1]], 0, 0), claim([['R2', 1]], 0, 1), claim([['R3', 2, true]], 0, 1)]);
  assert.deepEqual(limitsOf(rl), { '0': { R1: 10 }, '1': { R2: 8 }, global: { R3: 2 } });
});

test('rate limiter: an explicit count below a need, or a missing one, fails registration (nothing changes)', () => {
  const rl = new RateLimiter([{ name: 'R1', count: 2, device: -1 }]);
  assert.throws(
    () => rl.register([claim([['R1', 3]])]),
    (e: unknown) =>
      e instanceof NereidError &&
      e.code === 'INVALID_ARG' &&
      e.message ===
        'Resource count for "R1" is limited to 2 which will prevent scheduling of one or more model instances, the minimum required count is 3',
  );
  assert.throws(() => rl.register([claim([['R9', 1]])]), /Resource count for "R9" is limited to 0/);
  assert.deepEqual(limitsOf(rl), {});
  rl.register([claim([['R1', 2]])]);
});

test('rate limiter: a resource cannot be global for one model and per-device for another', () => {
  const rl = new RateLimiter();
  rl.register([claim([['R', 1, true]])]);
  assert.throws(
    () => rl.register([claim([['R', 1]])]),
    /Resource "R" is present as both global and device-specific resource in the model configuration\./,
  );
});

test('rate limiter: an instance runs only while its resources are free', () => {
  const rl = new RateLimiter();
  const [a, b] = rl.register([claim([['R', 1]]), claim([['R', 1]])]);
  const log: string[] = [];
  ask(a, log, 'a');
  assert.deepEqual(log, ['a'], 'granted at once');
  ask(b, log, 'b');
  assert.deepEqual(log, ['a'], 'b waits for R');
  a.release(true);
  assert.deepEqual(log, ['a', 'b'], 'R handed on');
  b.release(true);
  ask(a, log, 'a2');
  assert.deepEqual(log, ['a', 'b', 'a2']);
});

test('rate limiter: per-device resources do not contend across devices; global ones do', () => {
  const rl = new RateLimiter();
  const [d0, d1, g0, g1] = rl.register([
    claim([['L', 1]], 0, 0),
    claim([['L', 1]], 0, 1),
    claim([['G', 1, true]], 0, 0),
    claim([['G', 1, true]], 0, 1),
  ]);
  const log: string[] = [];
  ask(d0, log, 'd0');
  ask(d1, log, 'd1');
  ask(g0, log, 'g0');
  ask(g1, log, 'g1');
  assert.deepEqual(log, ['d0', 'd1', 'g0']);
  g0.release(true);
  assert.deepEqual(log, ['d0', 'd1', 'g0', 'g1']);
});

test('rate limiter: fewer executions × priority goes first; priority 2 counts each turn twice', () => {
  const rl = new RateLimiter();
  const [holder, p1, p2] = rl.register([claim([['R', 1]]), claim([['R', 1]], 1), claim([['R', 1]], 2)]);
  const log: string[] = [];
  const round = (e1: number, e2: number): string => {
    p1.executions = e1;
    p2.executions = e2;
    ask(holder, [], 'holder');
    ask(p2, log, '2');
    ask(p1, log, '1');
    log.length = 0;
    holder.release(false);
    const first = log[0];
    (first === '1' ? p1 : p2).release(false);
    (first === '1' ? p2 : p1).release(false);
    return log.join('');
  };
  assert.equal(round(3, 2), '12', '3 × 1 < 2 × 2');
  assert.equal(round(5, 2), '21', '5 × 1 > 2 × 2');
  assert.equal(round(4, 2), '21', 'a tie goes to the one that asked first');
  assert.equal(round(0, 0), '21');
  // release(true) is what counts a turn.
  p1.executions = 0;
  ask(p1, [], 'x');
  p1.release(true);
  ask(p1, [], 'x');
  p1.release(false);
  assert.equal(p1.executions, 1);
});

test('rate limiter: the first in line blocks smaller claims behind it (no starvation)', () => {
  const rl = new RateLimiter([{ name: 'R', count: 2, device: -1 }]);
  const [small1, big, small2] = rl.register([claim([['R', 1]]), claim([['R', 2]]), claim([['R', 1]])]);
  const log: string[] = [];
  ask(small1, log, 'small1');
  ask(big, log, 'big');
  ask(small2, log, 'small2');
  assert.deepEqual(log, ['small1'], 'small2 could fit but big is first in line');
  small1.release(true);
  assert.deepEqual(log, ['small1', 'big']);
  big.release(true);
  assert.deepEqual(log, ['small1', 'big', 'small2']);
});

test('rate limiter: cancel withdraws a request; unclaimed instances are never limited', () => {
  const rl = new RateLimiter();
  const [a, b, free] = rl.register([claim([['R', 1]]), claim([['R', 1]]), claim([])]);
  const log: string[] = [];
  ask(a, log, 'a');
  ask(b, log, 'b');
  b.cancel();
  a.release(true);
  assert.deepEqual(log, ['a'], 'b was withdrawn');
  ask(a, log, 'a2');
  ask(free, log, 'free');
  assert.deepEqual(log, ['a', 'a2', 'free']);
});

test('rate limiter: unregistering a model frees its needs for the counts', () => {
  const rl = new RateLimiter();
  rl.register([claim([['R', 1]])]);
  const big = rl.register([claim([['R', 4]])]);
  assert.deepEqual(limitsOf(rl), { '0': { R: 4 } });
  rl.unregister(big);
  assert.deepEqual(limitsOf(rl), { '0': { R: 1 } });
});

test('rate limiter: claims follow the loader order of instance groups', () => {
  const config = parseModelConfigText(
    `name: "m"
     instance_group [
       { count: 2 kind: KIND_CPU rate_limiter { resources [ { name: "R1" count: 4 }, { name: "R2" global: true count: 2 } ] priority: 2 } },
       { count: 1 kind: KIND_CPU passive: true },
       { count: 1 kind: KIND_CPU }
     ]`,
    'm',
  );
  const claims = instanceClaimsOf(config);
  assert.equal(claims.length, 3);
  assert.deepEqual(claims[0], {
    resources: [
      { name: 'R1', global: false, count: 4 },
      { name: 'R2', global: true, count: 2 },
    ],
    priority: 2,
    device: 0,
  });
  assert.deepEqual(claims[2], { resources: [], priority: 0, device: 0 });
  const rl = new RateLimiter();
  assert.throws(() => rl.registerModel(config, 4), /has 4 instances but its instance groups describe 3/);
  const reg = rl.registerModel(config, 3);
  assert.equal(reg.tickets.length, 3);
  reg.unregister();
  assert.deepEqual(limitsOf(rl), {});
});
