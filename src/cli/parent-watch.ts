/**
 * Notices that the process which started the server has gone away. `npm start` and `npx nereid` run the
 * server under `sh -c`: npm passes a SIGTERM to that shell only, and dash (Debian's sh) exits without
 * passing it on, which used to leave the server (and its Python stubs) running with nobody to stop them.
 * When the server was started by npm, main.ts polls for its parent to exit and then stops as it does on
 * SIGTERM. Signals that do reach the server are handled
 * first; this is the backstop for the ones that don't.
 */

/** True when npm (npm start, npm run, npm exec / npx) started this process: it sets these variables. */
export function startedByNpm(env: NodeJS.ProcessEnv): boolean {
  return env.npm_lifecycle_event !== undefined || env.npm_command !== undefined;
}

/**
 * Calls `onGone` once when the parent this process had at the start has exited; returns a function that
 * stops watching. (process.ppid is read once at start-up in Node, so the parent is probed with signal 0:
 * ESRCH means it is gone.) The timer does not keep the process alive.
 */
export function watchParent(onGone: (formerParent: number) => void, intervalMs = 500): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    try {
      process.kill(parent, 0);
      return;
    } catch (err) {
      // EPERM: it exists but belongs to someone else (it was replaced by another process): keep watching.
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') return;
    }
    clearInterval(timer);
    onGone(parent);
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
