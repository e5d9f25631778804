/** VersionHolds: what an unloading version waits for before it drains, and what revoking ends. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VersionHolds } from './holds.js';

/** Whether a promise has settled, looked at after the pending reactions have run. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('VersionHolds', () => {
  it('whenReleased waits for every hold, and each release counts once', async () => {
    const holds = new VersionHolds();
    const a = holds.add();
    const b = holds.add();
    const waiting = holds.whenReleased();
    a();
    a(); // a second call of the same release must not release b's hold
    assert.equal(holds.size, 1);
    assert.equal(await settled(waiting), false);
    b();
    assert.equal(holds.size, 0);
    assert.equal(await settled(waiting), true);
  });

  it('with no hold, whenReleased is already settled', async () => {
    assert.equal(await settled(new VersionHolds().whenReleased()), true);
  });

  it('revoke ends the wait and stops honouring the holds still out', async () => {
    const holds = new VersionHolds();
    const release = holds.add();
    const waiting = holds.whenReleased();
    assert.equal(holds.honoured, true);
    holds.revoke();
    assert.equal(holds.honoured, false);
    assert.equal(await settled(waiting), true);
    assert.equal(await settled(holds.whenReleased()), true, 'later waits do not hang either');
    release();
    assert.equal(holds.size, 0);
  });
});
