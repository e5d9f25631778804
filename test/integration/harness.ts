/**
 * Integration-test harness: temporary model repositories built from the generated fixtures, a real Nereid
 * started in-process on port 0 (real sockets, real onnxruntime workers), and small HTTP helpers.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Logger } from '../../src/common/logger.js';
import { startNereid, type RunningNereid } from '../../src/compose/compose.js';
import { parseFlags } from '../../src/compose/flags.js';

/** The source tree root (this file compiles to dist/test/integration/). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const FIXTURES = path.join(ROOT, 'test/fixtures/models');
export const EXAMPLES = path.join(ROOT, 'examples/model_repository');

export interface ModelSpec {
  /** config.pbtxt text; omitted = no config file (auto-complete). */
  config?: string;
  /** Fixture file name under test/fixtures/models, copied to <version>/model.onnx. */
  onnx?: string;
  versions?: number[];
  /** Extra files: relative path → content. */
  files?: Record<string, string | Buffer>;
}

export function makeRepository(models: Record<string, ModelSpec>): string {
  const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-repo-'));
  for (const [name, spec] of Object.entries(models)) addModel(repo, name, spec);
  return repo;
}

export function addModel(repo: string, name: string, spec: ModelSpec): void {
  const dir = path.join(repo, name);
  mkdirSync(dir, { recursive: true });
  if (spec.config !== undefined) writeFileSync(path.join(dir, 'config.pbtxt'), spec.config);
  for (const v of spec.versions ?? [1]) {
    mkdirSync(path.join(dir, String(v)), { recursive: true });
    if (spec.onnx) cpSync(path.join(FIXTURES, spec.onnx), path.join(dir, String(v), 'model.onnx'));
  }
  for (const [rel, content] of Object.entries(spec.files ?? {})) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), content);
  }
}

export function removeRepository(repo: string): void {
  rmSync(repo, { recursive: true, force: true });
}

export interface TestServer {
  readonly url: string;
  readonly running: RunningNereid;
  readonly logs: string[];
  stop(): Promise<void>;
}

/** Starts Nereid in-process with tritonserver-style flags (HTTP on port 0 unless given). */
export async function startServer(args: string[]): Promise<TestServer> {
  const { options } = parseFlags([
    '--http-port=0',
    '--http-address=127.0.0.1',
    '--metrics-port=0',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
    ...args,
  ]);
  const logs: string[] = [];
  const log = new Logger({}, (line) => logs.push(line));
  const running = await startNereid(options, log);
  const http = running.http!;
  return { url: `http://127.0.0.1:${http.port}`, running, logs, stop: () => running.stop() };
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: Buffer;
  json<T = unknown>(): T;
}

export async function request(
  url: string,
  init: { method?: string; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<HttpResult> {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    body: init.body,
    headers: init.headers,
  });
  const body = Buffer.from(await res.arrayBuffer());
  return {
    status: res.status,
    headers: res.headers,
    body,
    json: <T>() => JSON.parse(body.toString('utf8')) as T,
  };
}

export const post = (url: string, body: unknown, headers?: Record<string, string>): Promise<HttpResult> =>
  request(url, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers });

/**
 * POST over a given node:http agent, so the caller decides which requests share a connection (fetch keeps
 * a pool of its own). Any status resolves; the body comes back as text.
 */
export function postOnAgent(
  agent: http.Agent,
  url: string,
  body: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { 'Content-Type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Builds a binary-tensor-data request body: JSON header followed by the tensors' bytes. */
export function binaryBody(
  header: unknown,
  blobs: Buffer[],
): { body: Buffer; headers: Record<string, string> } {
  const json = Buffer.from(JSON.stringify(header));
  return {
    body: Buffer.concat([json, ...blobs]),
    headers: {
      'Inference-Header-Content-Length': String(json.length),
      'Content-Type': 'application/octet-stream',
    },
  };
}

/** Splits a binary response into its JSON header and the blobs of the binary outputs, in order. */
export function splitBinaryResponse(res: HttpResult): {
  header: {
    outputs: {
      name: string;
      shape: number[];
      datatype: string;
      parameters?: { binary_data_size?: number };
      data?: unknown[];
    }[];
  };
  blobs: Map<string, Buffer>;
} {
  const len = Number(res.headers.get('inference-header-content-length') ?? res.body.length);
  const header = JSON.parse(res.body.subarray(0, len).toString('utf8')) as ReturnType<
    typeof splitBinaryResponse
  >['header'];
  const blobs = new Map<string, Buffer>();
  let off = len;
  for (const o of header.outputs) {
    const size = o.parameters?.binary_data_size;
    if (size === undefined) continue;
    blobs.set(o.name, res.body.subarray(off, off + size));
    off += size;
  }
  return { header, blobs };
}

/** Waits until `check` returns true, polling every 20 ms (bounded). */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('condition not met in time');
}
