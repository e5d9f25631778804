/**
 * The way an HTTP protocol thread hands a request to the main thread's own HTTP server (on 127.0.0.1) as it
 * came, and relays the answer byte for byte: every request the thread does not serve itself (worker.ts).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';

export class Forwarder {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

  constructor(private readonly internalPort: number) {}

  /** Sends `body` (or, when undefined, the request's own stream) as the request `req`; relays the answer. */
  forward(req: IncomingMessage, res: ServerResponse, body: Buffer | undefined): void {
    const headers = { ...req.headers };
    // The 100-continue exchange already happened here (Node answers it); the main thread gets the body.
    delete headers.expect;
    const out = http.request(
      {
        agent: this.agent,
        host: '127.0.0.1',
        port: this.internalPort,
        method: req.method,
        path: req.url,
        headers,
      },
      (answer) => {
        if (res.destroyed) {
          answer.resume();
          return;
        }
        // The main thread's status line and headers as they are (its Date, Connection, Content-Length or
        // Transfer-Encoding), so the client sees what it would have seen without threads.
        res.sendDate = false;
        res.writeHead(answer.statusCode ?? 500, answer.statusMessage, answer.rawHeaders);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    if (body !== undefined) out.end(body);
    else req.pipe(out);
  }

  close(): void {
    this.agent.destroy();
  }
}
