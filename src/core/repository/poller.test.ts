import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../common/logger.js';
import { Poller } from './poller.js';
import { deferred, flush } from './repository.testkit.js';

void test('the poller runs one poll per interval, never two at once, and stop() waits for a running poll', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    let calls = 0;
    let gate = deferred();
    const poller = new Poller(
      1000,
      async () => {
        calls++;
        await gate.promise;
      },
      silentLogger(),
    );
    poller.start();
    mock.timers.tick(999);
    assert.equal(calls, 0);
    mock.timers.tick(1);
    assert.equal(calls, 1);
    mock.timers.tick(5000);
    assert.equal(calls, 1, 'no second poll while the first runs');
    gate.resolve();
    await flush();
    gate = deferred();
    mock.timers.tick(1000);
    assert.equal(calls, 2, 'the next interval starts when a poll ends');

    let stopped = false;
    const stopping = poller.stop().then(() => (stopped = true));
    await flush();
    assert.equal(stopped, false, 'stop waits for the running poll');
    gate.resolve();
    await stopping;
    mock.timers.tick(10_000);
    assert.equal(calls, 2, 'no polls after stop');
  } finally {
    mock.timers.reset();
  }
});

void test('a failing poll is logged and polling goes on', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const lines: string[] = [];
    const { Logger } = await import('../../common/logger.js');
    let calls = 0;
    const poller = new Poller(
      10,
      () => {
        calls++;
        return Promise.reject(new Error('disk gone'));
      },
      new Logger({}, (l) => lines.push(l)),
    );
    poller.start();
    mock.timers.tick(10);
    await flush();
    mock.timers.tick(10);
    await flush();
    assert.equal(calls, 2);
    assert.ok(lines.some((l) => l.includes('model repository poll failed: disk gone')));
    await poller.stop();
  } finally {
    mock.timers.reset();
  }
});

void test('trigger() polls at once when idle, once more after a running poll, and never after stop()', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    let calls = 0;
    let gate = deferred();
    // Interval 0: no timer, only triggers (watch mode with --repository-poll-secs=0).
    const poller = new Poller(
      0,
      async () => {
        calls++;
        await gate.promise;
      },
      silentLogger(),
    );
    poller.start();
    mock.timers.tick(60_000);
    assert.equal(calls, 0, 'interval 0 means no timer');
    poller.trigger();
    assert.equal(calls, 1, 'an idle poller polls at once');
    poller.trigger();
    poller.trigger();
    assert.equal(calls, 1, 'never two at once');
    const first = gate;
    gate = deferred();
    first.resolve();
    await flush();
    assert.equal(calls, 2, 'triggers during a poll give exactly one more poll');
    gate.resolve();
    await flush();
    assert.equal(calls, 2);
    await poller.stop();
    poller.trigger();
    assert.equal(calls, 2, 'no polls after stop');
  } finally {
    mock.timers.reset();
  }
});
