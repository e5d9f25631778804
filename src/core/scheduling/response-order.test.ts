import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ResponseSender, SendOptions } from '../../backend-api/backend.js';
import { internal, type NereidError } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import { ResponseOrder } from './response-order.js';

/** A sender that writes what reaches it into a shared log. */
function target(label: string, log: string[]): ResponseSender {
  let done = false;
  return {
    get done() {
      return done;
    },
    send(_outputs: readonly Tensor[], options: SendOptions) {
      log.push(`${label}:${options.final ? 'final' : 'part'}`);
      if (options.final) done = true;
    },
    fail(error: NereidError) {
      log.push(`${label}:fail:${error.message}`);
      done = true;
    },
  };
}

test('response order: a later request that finishes first waits for the earlier ones', async () => {
  const log: string[] = [];
  const order = new ResponseOrder();
  const a = order.enter(target('a', log));
  const b = order.enter(target('b', log));
  const c = order.enter(target('c', log));
  c.send([], { final: true });
  b.send([], { final: true });
  assert.deepEqual(log, [], 'nothing goes out before a');
  assert.equal(b.done, true, 'the backend is done with b even though its answer is held');
  let bSettled = false;
  void b.settled.then(() => (bSettled = true));
  await Promise.resolve();
  assert.equal(bSettled, false);
  a.send([], { final: true });
  assert.deepEqual(log, ['a:final', 'b:final', 'c:final']);
  await Promise.all([a.settled, b.settled, c.settled]);
  assert.equal(order.waiting, 0);
});

test('response order: the head streams at once; held parts keep their order; errors count as ends', () => {
  const log: string[] = [];
  const order = new ResponseOrder();
  const a = order.enter(target('a', log));
  const b = order.enter(target('b', log));
  const c = order.enter(target('c', log));
  a.send([], { final: false });
  assert.deepEqual(log, ['a:part']);
  b.send([], { final: false });
  b.send([], { final: false });
  c.fail(internal('boom'));
  a.send([], { final: true });
  assert.deepEqual(log, ['a:part', 'a:final', 'b:part', 'b:part'], 'b is the head now and not finished');
  b.send([], { final: false });
  b.send([], { final: true });
  assert.deepEqual(log, ['a:part', 'a:final', 'b:part', 'b:part', 'b:part', 'b:final', 'c:fail:boom']);
  a.send([], { final: true });
  assert.equal(log.length, 7, 'nothing after the end');
});
