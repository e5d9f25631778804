/**
 * The real server the end-to-end fuzz targets talk to: a whole Nereid in this process (Nereid.start, the
 * same composition as the `nereid` command) on a temporary repository of built-in `identity` models —
 * variable and fixed shapes, batching and not, BYTES, BOOL, optional inputs, a dynamic batcher and a
 * sequence batcher — in explicit mode, with client shared memory on and an HTTP frontend on a loopback
 * port. Started once per process by the first target that needs it; stop() at the end.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { InferenceServerApi } from '../../src/core/server-api.js';
import { Nereid, type NereidServer } from '../../src/index.js';

export interface LiveInput {
  readonly name: string;
  /** The KServe datatype (the config says TYPE_<x>, TYPE_STRING for BYTES). */
  readonly datatype: 'FP32' | 'INT32' | 'BYTES' | 'BOOL' | 'INT64' | 'UINT8' | 'FP16' | 'FP64';
  readonly dims: readonly number[];
  readonly optional?: boolean;
  /** The model sees this shape (config `reshape`). */
  readonly reshape?: readonly number[];
}

export interface LiveModel {
  readonly maxBatchSize: number;
  readonly inputs: readonly LiveInput[];
  /** Scheduling and anything else, as config text. */
  readonly extra?: string;
}

/** The models: every one is Triton's `identity` test backend (OUTPUTi = INPUTi). */
export const LIVE_MODELS: Readonly<Record<string, LiveModel>> = {
  id_fp32: { maxBatchSize: 4, inputs: [{ name: 'INPUT0', datatype: 'FP32', dims: [-1] }] },
  id_mixed: {
    maxBatchSize: 0,
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', dims: [2, -1] },
      { name: 'INPUT1', datatype: 'BYTES', dims: [-1] },
      { name: 'INPUT2', datatype: 'BOOL', dims: [1], optional: true },
      { name: 'INPUT3', datatype: 'INT64', dims: [3], optional: true },
    ],
  },
  id_batched: {
    maxBatchSize: 8,
    inputs: [
      { name: 'INPUT0', datatype: 'UINT8', dims: [-1, 2] },
      { name: 'INPUT1', datatype: 'FP16', dims: [1] },
    ],
    extra:
      'dynamic_batching { max_queue_delay_microseconds: 0 priority_levels: 2 default_priority_level: 1 ' +
      'default_queue_policy { allow_timeout_override: true max_queue_size: 16 } }',
  },
  id_sequence: {
    maxBatchSize: 2,
    inputs: [{ name: 'INPUT0', datatype: 'INT32', dims: [1] }],
    extra: 'sequence_batching { max_sequence_idle_microseconds: 200000 }',
  },
  id_reshape: { maxBatchSize: 0, inputs: [{ name: 'INPUT0', datatype: 'FP64', dims: [4], reshape: [2, 2] }] },
};

const configType = (t: LiveInput['datatype']): string => (t === 'BYTES' ? 'TYPE_STRING' : `TYPE_${t}`);

function configText(name: string, m: LiveModel): string {
  const tensors = m.inputs.map((i) => {
    const dims = `dims: [ ${i.dims.join(', ')} ]`;
    const reshape = i.reshape ? ` reshape { shape: [ ${i.reshape.join(', ')} ] }` : '';
    const out = `OUTPUT${i.name.slice('INPUT'.length)}`;
    return (
      `input { name: "${i.name}" data_type: ${configType(i.datatype)} ${dims}${reshape}${i.optional ? ' optional: true' : ''} } ` +
      `output { name: "${out}" data_type: ${configType(i.datatype)} dims: [ ${(i.reshape ?? i.dims).join(', ')} ] }`
    );
  });
  return `name: "${name}" backend: "identity" max_batch_size: ${m.maxBatchSize} ${tensors.join(' ')} ${m.extra ?? ''}`;
}

export interface LiveServer {
  readonly api: InferenceServerApi;
  /** The repository folder (explicit mode: targets may add model folders and load them). */
  readonly repository: string;
  /** The HTTP port. */
  readonly port: number;
  readonly server: NereidServer;
  /** POST/GET over a kept-alive loopback connection; resolves with the status and body. */
  readonly http: (
    method: string,
    path: string,
    body?: Buffer,
    headers?: Record<string, string>,
  ) => Promise<{ status: number; body: Buffer }>;
}

let live: Promise<LiveServer> | undefined;
let repo: string | undefined;
let agent: Agent | undefined;

async function start(): Promise<LiveServer> {
  repo = mkdtempSync(path.join(tmpdir(), 'nereid-fuzz-live-'));
  for (const [name, model] of Object.entries(LIVE_MODELS)) {
    mkdirSync(path.join(repo, name, '1'), { recursive: true });
    writeFileSync(path.join(repo, name, 'config.pbtxt'), configText(name, model));
  }
  // A decoupled model for the response-path targets: IN = n answers n responses (built-in `square`).
  mkdirSync(path.join(repo, 'square_int32', '1'), { recursive: true });
  writeFileSync(
    path.join(repo, 'square_int32', 'config.pbtxt'),
    'name: "square_int32" backend: "square" max_batch_size: 0 model_transaction_policy { decoupled: true } ' +
      'input { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } output { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }',
  );
  const server = await Nereid.start({
    modelRepository: repo,
    modelControlMode: 'explicit',
    loadModels: [...Object.keys(LIVE_MODELS), 'square_int32'],
    http: { port: 0 },
    log: false,
    flags: ['--allow-client-shm=true'],
  });
  const endpoint = server.http!;
  agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const http: LiveServer['http'] = (method, urlPath, body, headers = {}) =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: endpoint.port,
          method,
          path: urlPath,
          agent,
          headers: { ...headers, ...(body !== undefined && { 'content-length': String(body.length) }) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return { api: server.api, repository: repo, port: endpoint.port, server, http };
}

export function liveServer(): Promise<LiveServer> {
  live ??= start();
  return live;
}

export async function stopLiveServer(): Promise<void> {
  if (live === undefined) return;
  const s = await live;
  live = undefined;
  agent?.destroy();
  await s.server.close();
  if (repo !== undefined) rmSync(repo, { recursive: true, force: true });
}
