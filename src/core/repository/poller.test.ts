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
