/**
 * What the HTTP frontend costs per small inference request, the frontend alone: the KServe HTTP frontend
 * (from this build's dist, or another build's with --dist, to compare two versions) over the test kit's
 * in-memory add_sub model (2 × INT32 [16], Triton's add_sub shape), driven by perf_analyzer (binary
 * tensors, --concurrency requests in flight). Prints requests/s and this process's CPU time per request
 * (user + system, from process.cpuUsage: the server's whole cost, perf_analyzer runs in its own process).
 * `--bare` serves the same requests from a bare node:http handler instead (read the body, parse the JSON
 * header, answer a canned binary reply): the least node:http itself costs, the floor to compare with.
 * CPU per request is the steadier figure on a busy machine; alternate two builds run by run.
 *
 * Usage: node dist/bench/http-frontend-cpu.js [--dist <dist root>] [--bare] [--concurrency N]
 *        [--seconds N] [--port N]
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(arg('dist', path.join(here, '..')));
const bare = process.argv.includes('--bare');
const concurrency = arg('concurrency', '16');
const seconds = Number(arg('seconds', '4'));
const port = Number(arg('port', '0'));
const perfAnalyzer = path.join(here, '../../.venv/bin/perf_analyzer');

interface Frontend {
  listen(): Promise<{ port: number }>;
  close(): Promise<void>;
}

interface CountingApi {
  inferOnce(request: unknown): Promise<unknown>;
}

let requests = 0;

async function startFrontend(): Promise<{ port: number; close: () => Promise<void> }> {
  const { createHttpFrontend } = (await import(
    pathToFileURL(path.join(dist, 'src/frontends/http/server.js')).href
  )) as { createHttpFrontend: (api: unknown, options: object) => Frontend };
  const { FakeApi } = (await import(
    pathToFileURL(path.join(dist, 'src/frontends/http/fake-api.testkit.js')).href
  )) as { FakeApi: new () => CountingApi };
  const { Logger } = (await import(pathToFileURL(path.join(dist, 'src/common/logger.js')).href)) as {
    Logger: new (options: object, sink: (line: string) => void) => unknown;
  };
  const api = new FakeApi();
  const inferOnce = api.inferOnce.bind(api);
  api.inferOnce = (request) => {
    requests++;
    return inferOnce(request);
  };
  const fe = createHttpFrontend(api, { address: '127.0.0.1', port, log: new Logger({}, () => {}) });
  const bound = await fe.listen();
  return { port: bound.port, close: () => fe.close() };
}

/** The floor: what perf_analyzer needs of a server for add_sub, and a canned reply to every infer. */
function startBare(): Promise<{ port: number; close: () => Promise<void> }> {
  const tensor = (name: string) => ({ name, datatype: 'INT32', shape: [16] });
  const metadata = JSON.stringify({
    name: 'add_sub',
    versions: ['1'],
    platform: 'bare',
    inputs: [tensor('INPUT0'), tensor('INPUT1')],
    outputs: [tensor('OUTPUT0'), tensor('OUTPUT1')],
  });
  const dims = (name: string) => ({ name, data_type: 'TYPE_INT32', dims: [16] });
  const config = JSON.stringify({
    name: 'add_sub',
    max_batch_size: 0,
    input: [dims('INPUT0'), dims('INPUT1')],
    output: [dims('OUTPUT0'), dims('OUTPUT1')],
  });
  const output = (name: string) => ({ ...tensor(name), parameters: { binary_data_size: 64 } });
  const head = Buffer.from(
    JSON.stringify({
      model_name: 'add_sub',
      model_version: '1',
      outputs: [output('OUTPUT0'), output('OUTPUT1')],
    }),
  );
  const stats = (): string =>
    JSON.stringify({
      model_stats: [
        {
          name: 'add_sub',
          version: '1',
          inference_count: requests,
          execution_count: requests,
          inference_stats: { success: { count: requests, ns: requests * 1000 } },
        },
      ],
    });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '';
      if (url.endsWith('/infer')) {
        requests++;
        const body = Buffer.concat(chunks);
        JSON.parse(body.toString('utf8', 0, Number(req.headers['inference-header-content-length'])));
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          'Inference-Header-Content-Length': head.length,
          'Content-Length': head.length + 128,
        });
        res.end(Buffer.concat([head, Buffer.alloc(128)]));
      } else if (url.endsWith('/config')) res.end(config);
      else if (url.endsWith('/stats')) res.end(stats());
      else res.end(metadata);
    });
  });
  return new Promise((resolve) => {
    server.listen(port, '127.0.0.1', () => {
      const bound = server.address() as { port: number };
      resolve({ port: bound.port, close: () => new Promise((r) => server.close(() => r())) });
    });
  });
}

/**
 * Runs perf_analyzer; resolves with its exit code. Over the test kit's API it may end with "failed to find
 * the requested model version" once its measurement window is over (its server-side statistics step; the
 * kit's statistics are static): the requests were served all the same, and this script counts and times
 * them itself, so that exit is reported, not fatal.
 */
function runPerfAnalyzer(serverPort: number, extra: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      perfAnalyzer,
      [
        '-m',
        'add_sub',
        '-i',
        'http',
        '-u',
        `127.0.0.1:${serverPort}`,
        '--concurrency-range',
        concurrency,
        ...extra,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

const server = bare ? await startBare() : await startFrontend();
try {
  await runPerfAnalyzer(server.port, ['--request-count', '300']); // warm-up: the JIT settles
  const n0 = requests;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const run = await runPerfAnalyzer(server.port, [
    '--measurement-interval',
    String(seconds * 1000),
    '--stability-percentage',
    '999',
    '--max-trials',
    '3',
  ]);
  const cpu = process.cpuUsage(cpu0);
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  const n = requests - n0;
  if (n === 0) throw new Error(`no requests served; perf_analyzer said:\n${run.out}`);
  if (run.code !== 0) {
    const why = run.out.trim().split('\n').pop() ?? '';
    console.log(`(perf_analyzer exited ${run.code} after its window: ${why})`);
  }
  const load = (await import('node:os')).loadavg()[0].toFixed(2);
  console.log(
    `${bare ? 'bare node:http' : dist} c${concurrency}: ${Math.round(n / wallS)} req/s, ` +
      `${((cpu.user + cpu.system) / n).toFixed(1)} µs CPU/request ` +
      `(user ${(cpu.user / n).toFixed(1)}, system ${(cpu.system / n).toFixed(1)}), n=${n}, load ${load}`,
  );
} finally {
  await server.close();
}
