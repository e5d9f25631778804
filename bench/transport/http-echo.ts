/**
 * A bare node:http server answering KServe v2 inference for the echo model with binary outputs equal to
 * its inputs, plus the metadata, config, readiness and statistics endpoints perf_analyzer reads: the most
 * a Node HTTP/1.1 server can do on this machine with the same payloads, i.e. the ceiling Nereid's HTTP
 * frontend is compared with in bench/transport. It parses the JSON inference header (any real server
 * must) but does no validation beyond what answering correctly needs.
 *
 * Usage: node dist/bench/transport/http-echo.js [--port N]   (prints "http-echo listening on <port>")
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ECHO_MODEL,
  EchoCounters,
  modelConfig,
  modelMetadata,
  outputName,
  portArgument,
} from './echo-model.js';

const counters = new EchoCounters();

interface HeaderInput {
  name: string;
  datatype: string;
  shape: number[];
  parameters?: { binary_data_size?: number };
  data?: unknown;
}

function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  const body = Buffer.from(JSON.stringify(value));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function infer(req: http.IncomingMessage, res: http.ServerResponse, model: string): Promise<void> {
  const start = process.hrtime.bigint();
  const body = await readBody(req);
  const lengthHeader = req.headers['inference-header-content-length'];
  const headerLength = typeof lengthHeader === 'string' ? Number(lengthHeader) : body.length;
  const doc = JSON.parse(body.subarray(0, headerLength).toString('utf8')) as {
    id?: string;
    inputs: HeaderInput[];
  };
  const outputs: Record<string, unknown>[] = [];
  const blobs: Buffer[] = [];
  let offset = headerLength;
  let batch = 1;
  for (const input of doc.inputs) {
    batch = input.shape[0] ?? 1;
    const size = input.parameters?.binary_data_size;
    if (size === undefined) {
      // JSON data in, JSON data out
      outputs.push({
        name: outputName(input.name),
        datatype: input.datatype,
        shape: input.shape,
        data: input.data,
      });
      continue;
    }
    blobs.push(body.subarray(offset, offset + size));
    offset += size;
    outputs.push({
      name: outputName(input.name),
      datatype: input.datatype,
      shape: input.shape,
      parameters: { binary_data_size: size },
    });
  }
  const header = Buffer.from(
    JSON.stringify({ model_name: model, model_version: '1', ...(doc.id ? { id: doc.id } : {}), outputs }),
  );
  let length = header.length;
  for (const b of blobs) length += b.length;
  res.writeHead(200, {
    'Content-Type': blobs.length > 0 ? 'application/octet-stream' : 'application/json',
    'Content-Length': length,
    ...(blobs.length > 0 ? { 'Inference-Header-Content-Length': header.length } : {}),
  });
  res.cork();
  res.write(header);
  for (const b of blobs) res.write(b);
  res.uncork();
  res.end();
  counters.record(batch, start);
}

function route(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = (req.url ?? '/').split('?')[0];
  const segs = url.split('/').filter((s) => s.length > 0);
  if (segs[0] !== 'v2') return sendJson(res, 404, { error: 'not found' });
  if (segs.length === 1) {
    return sendJson(res, 200, {
      name: 'http-echo',
      version: '0',
      extensions: ['binary_tensor_data', 'statistics'],
    });
  }
  if (segs[1] === 'health') return void res.writeHead(200, { 'Content-Length': 0 }).end();
  if (segs[1] !== 'models' || segs.length < 3) return sendJson(res, 404, { error: 'not found' });
  // GET /v2/models/stats: every model's statistics (perf_analyzer asks this way)
  if (segs.length === 3 && segs[2] === 'stats') {
    return sendJson(res, 200, { model_stats: [counters.modelStats(ECHO_MODEL)] });
  }
  const model = decodeURIComponent(segs[2]);
  // drop /versions/<v>: the echo model has one version
  const rest = segs[3] === 'versions' ? segs.slice(5) : segs.slice(3);
  const action = rest[0] ?? '';
  if (req.method === 'POST' && action === 'infer') {
    infer(req, res, model).catch((err: unknown) => sendJson(res, 400, { error: String(err) }));
    return;
  }
  switch (action) {
    case '':
      return sendJson(res, 200, modelMetadata(model));
    case 'config':
      return sendJson(res, 200, modelConfig(model));
    case 'ready':
      return void res.writeHead(200, { 'Content-Length': 0 }).end();
    case 'stats':
      return sendJson(res, 200, { model_stats: [counters.modelStats(model)] });
    default:
      return sendJson(res, 404, { error: 'not found' });
  }
}

const server = http.createServer({ keepAliveTimeout: 60_000 }, route);
server.listen(portArgument(process.argv), '127.0.0.1', () => {
  console.log(`http-echo listening on ${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
