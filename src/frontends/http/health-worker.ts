/**
 * The thread behind --http-health-port (health-listener.ts starts it): a tiny HTTP server answering
 * `GET /v2/health/live` and `GET /v2/health/ready` from the state the main thread publishes in shared
 * memory. It has an event loop of its own, so a probe is accepted and answered in about a millisecond
 * however busy the main thread's loop and however long the main port's accept queue.
 *
 * The answers are the main port's (200 with no body, or 400; HEAD 405 as there and in Triton), with one
 * addition: the main thread publishes
 * every HEALTH_PUBLISH_MS, and a stale publication means its event loop is stuck. Then the server is not
 * ready (after READY_STALE_MS), and not live (after LIVE_STALE_MS), so an orchestrator stops sending
 * traffic, and restarts a server that does not recover.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

export interface HealthWorkerData {
  /** Marks this module's worker data (so an embedding that loads Nereid in a worker never starts it). */
  readonly nereidHealthWorker: true;
  readonly state: SharedArrayBuffer;
  readonly address: string;
  readonly port: number;
  readonly backlog: number;
  readonly readyStaleMs: number;
  readonly liveStaleMs: number;
}

/** Int32 slots of the shared state; the publication time (ms since the epoch) is a BigInt64 at byte 16. */
export const LIVE = 0;
export const READY = 1;
export const BEAT_BYTE_OFFSET = 16;
export const STATE_BYTES = 24;

export type HealthWorkerMessage =
  | { readonly listening: { readonly address: string; readonly port: number } }
  | { readonly error: { readonly code: string | undefined; readonly message: string } };

function run(data: HealthWorkerData): void {
  const flags = new Int32Array(data.state, 0, 2);
  const beat = new BigInt64Array(data.state, BEAT_BYTE_OFFSET, 1);
  const stale = (limitMs: number): boolean => Date.now() - Number(Atomics.load(beat, 0)) > limitMs;

  const answer = (res: ServerResponse, ok: boolean): void => {
    res.writeHead(ok ? 200 : 400, { 'Content-Length': 0 });
    res.end();
  };
  const server = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, (req: IncomingMessage, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const known = path === '/v2/health/live' || path === '/v2/health/ready';
    if (known && req.method !== 'GET') {
      const body = '{"error":"Method Not Allowed"}';
      res.writeHead(405, { 'Content-Type': 'application/json', 'Content-Length': body.length, Allow: 'GET' });
      res.end(req.method === 'HEAD' ? undefined : body);
    } else if (path === '/v2/health/live') {
      answer(res, Atomics.load(flags, LIVE) === 1 && !stale(data.liveStaleMs));
    } else if (path === '/v2/health/ready') {
      answer(res, Atomics.load(flags, READY) === 1 && !stale(data.readyStaleMs));
    } else {
      const body = '{"error":"Not Found"}';
      res.writeHead(404, { 'Content-Type': 'application/json', 'Content-Length': body.length });
      res.end(body);
    }
    // Probes send no body; anything sent is read and dropped so the connection stays usable.
    req.resume();
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  // The bind error goes to the parent; a later one (a refused accept) must not end the thread, and the
  // parent no longer listens for errors once it has the address: it is dropped, the server keeps serving.
  let listening = false;
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (listening) return;
    const message: HealthWorkerMessage = { error: { code: err.code, message: err.message } };
    parentPort!.postMessage(message);
  });
  server.listen({ port: data.port, host: data.address, backlog: data.backlog }, () => {
    listening = true;
    const addr = server.address();
    if (addr === null || typeof addr === 'string') return;
    const message: HealthWorkerMessage = { listening: { address: addr.address, port: addr.port } };
    parentPort!.postMessage(message);
  });
  parentPort!.on('message', (m: unknown) => {
    if (m === 'close') {
      server.close(() => process.exit(0));
      server.closeAllConnections();
    }
  });
}

if (parentPort !== null && (workerData as Partial<HealthWorkerData> | null)?.nereidHealthWorker === true) {
  run(workerData as HealthWorkerData);
}
