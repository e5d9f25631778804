/**
 * The thread behind precise-timer.ts. It sleeps on the shared slots until the earliest due time the main
 * thread published, then posts one message and waits for the main thread to publish again (so a slow main
 * thread gets one message, not a flood). Atomics.wait takes fractional milliseconds and is woken by the
 * kernel within tens of microseconds, which Node's millisecond loop clock cannot do. It never returns to
 * its own event loop; terminating the worker interrupts the wait.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { NO_DUE, type TimerSlots } from './precise-timer.js';

const { due, seq } = workerData as TimerSlots;
const port = parentPort!;

for (;;) {
  // Read the sequence first: a publish between the two reads makes the wait below return at once.
  const seen = Atomics.load(seq, 0);
  const at = Atomics.load(due, 0);
  if (at === NO_DUE) {
    Atomics.wait(seq, 0, seen);
    continue;
  }
  const left = at - process.hrtime.bigint();
  if (left > 0n) {
    Atomics.wait(seq, 0, seen, Number(left) / 1e6);
    continue;
  }
  port.postMessage(null);
  Atomics.wait(seq, 0, seen);
}
