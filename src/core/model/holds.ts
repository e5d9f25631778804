/**
 * The holds on one servable version: requests that resolved the version (a ResolvedModel, model-handle.ts)
 * and have not run on it yet. Triton's InferenceRequest keeps a shared_ptr to the model it was created for,
 * and the model is destroyed only when the last one is released; here a hold does the same job: a version
 * that starts unloading still accepts the requests that hold it, and its unload waits until every hold is
 * released before it drains. When the unload gives up waiting (--model-unload-timeout-secs), the holds
 * are revoked: a held request that has not run yet then fails with the version's UNAVAILABLE error.
 */

export class VersionHolds {
  private count = 0;
  private revokedAll = false;
  private waiters: (() => void)[] = [];

  /** Adds a hold; the returned function releases it (once, later calls do nothing). */
  add(): () => void {
    this.count++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.count--;
      if (this.count === 0) this.wake();
    };
  }

  /** Holds not yet released (tests, diagnostics). */
  get size(): number {
    return this.count;
  }

  /** A hold still lets a request in (the version's unload has not given up on them). */
  get honoured(): boolean {
    return !this.revokedAll;
  }

  /** Resolves once no hold is left (or they were revoked). */
  whenReleased(): Promise<void> {
    if (this.count === 0 || this.revokedAll) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The unload stops waiting: holds no longer let requests in. */
  revoke(): void {
    this.revokedAll = true;
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
