// The 503 of a request whose --model-load-wait-secs ran out says which wait it was: for room (every loaded
// model busy, so no load began) or for a load that is still running. The controller is real; its host is a
// small in-memory repository whose loads the test holds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { silentLogger } from '../../common/logger.js';
import type { Resident } from './eviction.js';
import { OnDemandController, type OnDemandHost } from './on-demand.js';

class Host implements OnDemandHost {
  readonly loaded = new Map<string, Resident>();
  /** Loads wait for this to resolve. */
  release: () => void = () => {};
  private gate = new Promise<void>((r) => (this.release = r));

  isServable(name: string): boolean {
    return this.loaded.has(name);
  }
  assertInRepository(): void {}
  async loadModel(name: string): Promise<void> {
    await this.gate;
    this.loaded.set(name, { name, bytes: 1, lastUsed: 0, busy: false, pinned: false });
  }
  unloadModel(name: string): Promise<void> {
    this.loaded.delete(name);
    return Promise.resolve();
  }
  residents(): Resident[] {
    return [...this.loaded.values()];
  }
}

const WAIT_MS = 300;
const controller = (host: Host, retryMs = 5) =>
  new OnDemandController(host, {
    maxModels: 1,
    budgetBytes: 0,
    waitMs: WAIT_MS,
    log: silentLogger(),
    retryMs,
  });

async function refusal(p: Promise<unknown> | undefined): Promise<NereidError> {
  assert.ok(p, 'the model is not servable yet');
  const err = await p.then(
    () => assert.fail('the request was served'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof NereidError, String(err));
  assert.equal(err.code, 'UNAVAILABLE');
  return err;
}

describe('on-demand: what a request that gave up waiting is told', () => {
  // Either wait may end first: the load's for room (it looks again every retryMs) or the request's own.
  // With a retry longer than the wait, the request's ends first while the load sleeps between looks.
  for (const [retryMs, first] of [
    [5, "the load's wait for room"],
    [5 * WAIT_MS, "the request's wait"],
  ] as const)
    it(`no room (the one slot busy), ${first} ending first: "cannot load", never "still loading"`, async () => {
      const host = new Host();
      host.release();
      host.loaded.set('hot', { name: 'hot', bytes: 1, lastUsed: 0, busy: true, pinned: false });
      const c = controller(host, retryMs);
      const errors = await Promise.all([0, 1, 2].map(() => refusal(c.ensure('cold'))));
      for (const e of errors) {
        assert.match(
          e.message,
          /^cannot load model 'cold': 1 model\(s\) loaded and 0 loading \(--max-loaded-models=1\), and none can be unloaded to make room: 1 busy, 0 pinned \(waited 0.3 s for room, --model-load-wait-secs\); no load has begun/,
        );
        assert.doesNotMatch(e.message, /did not finish loading|still/);
      }
      assert.ok(!host.isServable('cold'));
      c.close();
    });

  it('room made but the load outlasts the wait: "its load is still running", and the load goes on', async () => {
    const host = new Host();
    const c = controller(host);
    const e = await refusal(c.ensure('slow'));
    assert.equal(
      e.message,
      "model 'slow' did not finish loading within 0.3 s (--model-load-wait-secs); its load is still running, try again",
    );
    assert.equal(c.loadsInProgress, 1);
    host.release();
    for (let i = 0; i < 1000 && !host.isServable('slow'); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(host.isServable('slow'), 'the load finished after the request gave up');
    assert.equal(c.ensure('slow'), undefined);
    c.close();
  });
});
