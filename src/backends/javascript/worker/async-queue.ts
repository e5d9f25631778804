/**
 * A one-consumer queue of values that arrive as messages (BLS results): next() waits for the next value,
 * fail() makes the pending and every later next() reject.
 */
export class AsyncQueue<T> {
  private readonly items: T[] = [];
  private waiter: { resolve(v: T): void; reject(e: Error): void } | undefined;
  private error: Error | undefined;
  failed = false;

  push(value: T): void {
    if (this.failed) return;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve(value);
    } else {
      this.items.push(value);
    }
  }

  fail(error: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.error = error;
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(error);
  }

  next(): Promise<T> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift()!);
    if (this.error) return Promise.reject(this.error);
    return new Promise<T>((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }
}
