/**
 * What the gRPC frontend costs per large message, transport and codec only: the frontend (from this build's
 * dist, or another build's with --dist, to compare two versions) over the in-memory identity model of the
 * test kit, driven by Node's own HTTP/2 client with `--concurrency` ModelInfer calls in flight, each a
 * `--values` FP32 tensor (153,600 = 600 KB, bench/transport's large case) echoed back. Prints calls/s and the
 * process CPU time per call (client and server share the process; the client's part is the same for both
 * builds, so differences are the server's). CPU per call is the steadier figure on a busy machine.
 *
 * Usage: node dist/bench/grpc-large-messages.js [--dist <dist root>] [--values N] [--concurrency N]
 *        [--seconds N] [--rounds N]
 */
import http2 from 'node:http2';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(arg('dist', path.join(here, '..')));
const values = Number(arg('values', '153600'));
const concurrency = Number(arg('concurrency', '8'));
const seconds = Number(arg('seconds', '5'));

interface Frontend {
  listen(): Promise<{ port: number }>;
  close(): Promise<void>;
}

const { createGrpcFrontend } = (await import(
  pathToFileURL(path.join(dist, 'src/frontends/grpc/server.js')).href
)) as {
  createGrpcFrontend: (api: unknown, options: object) => Frontend;
};
const { GrpcFakeApi } = (await import(
  pathToFileURL(path.join(dist, 'src/frontends/grpc/fake-api.testkit.js')).href
)) as { GrpcFakeApi: new () => unknown };
const { Logger } = (await import(pathToFileURL(path.join(dist, 'src/common/logger.js')).href)) as {
  Logger: new (o: object, sink: (l: string) => void) => unknown;
};
const { encodeMessage } = (await import(
  pathToFileURL(path.join(dist, 'src/frontends/grpc/test-client.testkit.js')).href
)) as { encodeMessage: (type: string, value: object) => Buffer };

const frontend = createGrpcFrontend(new GrpcFakeApi(), {
  address: '127.0.0.1',
  port: 0,
  log: new Logger({}, () => {}),
});
const { port } = await frontend.listen();

const message = encodeMessage('inference.ModelInferRequest', {
  model_name: 'identity',
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [values] }],
  raw_input_contents: [Buffer.alloc(values * 4, 7)],
});
const framed = Buffer.alloc(5 + message.length);
framed.writeUInt32BE(message.length, 1);
message.copy(framed, 5);

const session = http2.connect(`http://127.0.0.1:${port}`, { settings: { initialWindowSize: 16 << 20 } });
session.on('error', () => {});
await new Promise<void>((resolve) => session.once('connect', () => resolve()));
session.setLocalWindowSize(64 << 20);

function call(): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ':method': 'POST',
      ':path': '/inference.GRPCInferenceService/ModelInfer',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let bytes = 0;
    let status: string | undefined;
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('trailers', (t: http2.IncomingHttpHeaders) => (status = String(t['grpc-status'])));
    req.on('error', reject);
    req.on('close', () =>
      status === '0' && bytes > values * 4
        ? resolve()
        : reject(new Error(`status ${status}, ${bytes} bytes`)),
    );
    req.end(framed);
  });
}

async function run(ms: number): Promise<{ calls: number; cpuMs: number; wallMs: number }> {
  const end = performance.now() + ms;
  const cpu = process.cpuUsage();
  const start = performance.now();
  let calls = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await call();
        calls++;
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return { calls, cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - start };
}

await run(1000); // warm-up
const rounds = Number(arg('rounds', '3'));
for (let i = 0; i < rounds; i++) {
  const r = await run(seconds * 1000);
  console.log(
    JSON.stringify({
      dist,
      values,
      concurrency,
      callsPerSecond: Math.round((r.calls / r.wallMs) * 1000),
      cpuMsPerCall: Number((r.cpuMs / r.calls).toFixed(3)),
    }),
  );
}
session.close();
await frontend.close();
