/**
 * Python backend benchmark, two parts:
 *
 * 1. Backend overhead: identity_python (a model.py identity in its stub process) against identity_fp32
 *    (ONNX Runtime on its worker thread), one instance each, no batching, through the in-process core API
 *    so that only the backends differ. 16 FP32 and 3x224x224 FP32 (sent as [1,150528] to both, so the
 *    requests are byte-identical), concurrency 1 and 16, the two sides interleaved round by round so that
 *    load from elsewhere on the machine hits both alike. Per point: p50 and p99 latency, requests/s, CPU
 *    per request (server process, and the stub for Python), the Python/ONNX ratios, and the overhead in µs
 *    (Python − ONNX: p50 latency at concurrency 1, 1/throughput at 16). Target: ≤ 150 µs at c1, 16 FP32.
 * 2. Copies of a large tensor: /proc/<pid>/io of the server process (this one) and of the stub around
 *    identity requests at concurrency 1 — rchar/wchar count the bytes of read/write-family system calls
 *    (read, write, pread64, pwrite64, readv, writev, on sockets too, but not sendto/recvfrom, which the
 *    stub uses on its socket), read_bytes/write_bytes what reached storage — per request, for 16 FP32
 *    (control frames only: the tensor rides inline) and 3x224x224 FP32 (through the /dev/shm files). The code paths (src/backends/python/shm.ts, tensors.ts;
 *    python/nereid_stub/shm.py, runtime.py) predict, per large request: the server pwrites the input into
 *    the host→stub file (wchar +602112), the stub reads it through its mapping (rchar +0), the stub
 *    pwrites the output into the stub→host file (wchar +602112), the server preads it into the response
 *    Buffer (rchar +602112). The measurement checks that, and where strace is installed (unless
 *    --no-strace) a short traced run of the server and the stub names the system calls and their sizes.
 *
 * Usage: node dist/bench/python.js [--requests 4000] [--rounds 7] [--out <file.json>] [--no-strace]
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { InferInput, InferenceRequest } from '../src/core/types.js';
import { Nereid, type NereidServer } from '../src/index.js';
import { stubPids } from '../test/integration/python-support.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLES = path.join(ROOT, 'examples/model_repository');
const LARGE = 3 * 224 * 224;
const ONNX = 'identity_fp32';
const PYTHON = 'identity_python';
const STRACE = '/usr/bin/strace';

const PYTHON_CONFIG = `# The Python twin of identity_fp32 (same I/O and batching), written by bench/python.ts.
name: "${PYTHON}"
backend: "python"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;

const PYTHON_MODEL = `"""OUTPUT0 = INPUT0: the least a Python model can do, so the backend's own cost is what is measured."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", r.inputs()[0].as_numpy())])
            for r in requests
        ]
`;

// --- measuring ---------------------------------------------------------------------------------------

interface Sample {
  readonly elapsedMs: number;
  readonly latenciesMs: number[];
  readonly hostCpuUs: number;
  readonly stubCpuUs: number;
}

/** `total` calls of `run` with `concurrency` in flight, each call's latency recorded. */
async function closedLoop(run: () => Promise<void>, total: number, concurrency: number): Promise<Sample> {
  let started = 0;
  const latenciesMs: number[] = [];
  const worker = async (): Promise<void> => {
    while (started < total) {
      started++;
      const t = performance.now();
      await run();
      latenciesMs.push(performance.now() - t);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { elapsedMs: performance.now() - t0, latenciesMs, hostCpuUs: 0, stubCpuUs: 0 };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const CLOCK_TICK_US = 1e6 / 100; // USER_HZ is 100 on Linux

/** utime + stime of a process in µs (clock-tick resolution), from /proc/<pid>/stat. */
function processCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime and stime are fields 14 and 15
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_US;
}

interface IoCounters {
  readonly rchar: number;
  readonly wchar: number;
  readonly read_bytes: number;
  readonly write_bytes: number;
}

function ioCounters(pid: number): IoCounters {
  const out: Record<string, number> = {};
  for (const line of readFileSync(`/proc/${pid}/io`, 'utf8').split('\n')) {
    const [key, value] = line.split(':');
    if (value !== undefined) out[key.trim()] = Number(value.trim());
  }
  return { rchar: out.rchar, wchar: out.wchar, read_bytes: out.read_bytes, write_bytes: out.write_bytes };
}

function ioPerRequest(before: IoCounters, after: IoCounters, n: number): IoCounters {
  return {
    rchar: (after.rchar - before.rchar) / n,
    wchar: (after.wchar - before.wchar) / n,
    read_bytes: (after.read_bytes - before.read_bytes) / n,
    write_bytes: (after.write_bytes - before.write_bytes) / n,
  };
}

/** The stub process of `instance` among this process's children. */
function stubPid(instance: string): number {
  const [pid] = stubPids(instance);
  if (pid === undefined) throw new Error(`no stub process for ${instance} under pid ${process.pid}`);
  return pid;
}

function fp32(n: number): InferInput {
  const data = Buffer.alloc(n * 4);
  new Float32Array(data.buffer, data.byteOffset, n).fill(1.5);
  return { name: 'INPUT0', datatype: 'FP32', shape: [1, n], data };
}

function requester(server: NereidServer, model: string, input: InferInput): () => Promise<void> {
  return async () => {
    const req: InferenceRequest = { modelName: model, inputs: [input], signal: new AbortController().signal };
    const r = await server.api.inferOnce(req);
    if (r.outputs[0].data.length !== input.data.length) throw new Error(`${model}: wrong answer`);
  };
}

// --- part 1 ------------------------------------------------------------------------------------------

interface Point {
  readonly side: string;
  readonly elements: number;
  readonly concurrency: number;
  readonly requests: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly requestsPerSec: number;
  /** CPU per request: this process (frontends absent: core + backend host side + onnxruntime threads). */
  readonly hostCpuUs: number;
  /** CPU per request of the Python stub (0 for ONNX). */
  readonly stubCpuUs: number;
}

async function backendOverhead(
  server: NereidServer,
  stub: number,
  requests: number,
  rounds: number,
): Promise<Point[]> {
  const points: Point[] = [];
  for (const elements of [16, LARGE]) {
    const input = fp32(elements);
    for (const concurrency of [1, 16]) {
      const total = elements === LARGE ? Math.max(200, Math.floor(requests / 8)) : requests;
      const sides = [ONNX, PYTHON].map((model) => ({
        model,
        run: requester(server, model, input),
        samples: [] as Sample[],
      }));
      for (const s of sides) await closedLoop(s.run, Math.min(200, total), concurrency); // warm-up
      for (let round = 0; round < rounds; round++) {
        for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
          const cpu0 = process.cpuUsage();
          const stub0 = processCpuUs(stub);
          const sample = await closedLoop(s.run, total, concurrency);
          const cpu = process.cpuUsage(cpu0);
          s.samples.push({
            ...sample,
            hostCpuUs: cpu.user + cpu.system,
            stubCpuUs: processCpuUs(stub) - stub0,
          });
        }
      }
      for (const s of sides) {
        const latencies = s.samples.flatMap((x) => x.latenciesMs).sort((a, b) => a - b);
        const n = total * rounds;
        const sum = (f: (x: Sample) => number): number => s.samples.reduce((acc, x) => acc + f(x), 0);
        points.push({
          side: s.model,
          elements,
          concurrency,
          requests: n,
          p50Us: percentile(latencies, 0.5) * 1000,
          p99Us: percentile(latencies, 0.99) * 1000,
          // the median round's rate: one disturbed round does not move it
          requestsPerSec: median(s.samples.map((x) => (total * 1000) / x.elapsedMs)),
          hostCpuUs: sum((x) => x.hostCpuUs) / n,
          stubCpuUs: s.model === PYTHON ? sum((x) => x.stubCpuUs) / n : 0,
        });
      }
    }
  }
  return points;
}

// --- part 2 ------------------------------------------------------------------------------------------

interface CopyReport {
  readonly side: string;
  readonly elements: number;
  readonly requests: number;
  readonly host: IoCounters;
  readonly stub: IoCounters | undefined;
}

async function copies(server: NereidServer, stub: number, requests: number): Promise<CopyReport[]> {
  const out: CopyReport[] = [];
  for (const [side, elements] of [
    [PYTHON, 16],
    [PYTHON, LARGE],
    [ONNX, LARGE],
  ] as const) {
    const run = requester(server, side, fp32(elements));
    const n = elements === LARGE ? Math.max(100, Math.floor(requests / 10)) : requests;
    await closedLoop(run, 20, 1);
    const host0 = ioCounters(process.pid);
    const stub0 = ioCounters(stub);
    await closedLoop(run, n, 1);
    const host1 = ioCounters(process.pid);
    const stub1 = ioCounters(stub);
    out.push({
      side,
      elements,
      requests: n,
      host: ioPerRequest(host0, host1, n),
      stub: side === PYTHON ? ioPerRequest(stub0, stub1, n) : undefined,
    });
  }
  return out;
}

interface StraceSummary {
  readonly requests: number;
  /** Per request, by process ("server", "stub") and system call: calls and bytes returned. */
  readonly perRequest: Record<string, Record<string, { calls: number; bytes: number }>>;
}

const TRACED_CALLS = 'pread64,pwrite64,read,write,readv,writev,recvfrom,sendto,recvmsg,sendmsg';

/** Attaches `strace -f` to `pid`; resolves once it is attached, with a function that detaches it. */
async function attachStrace(pid: number, file: string): Promise<() => Promise<void>> {
  const tracer = spawn(
    STRACE,
    ['-f', '-qq', '-s', '0', '-e', `trace=${TRACED_CALLS}`, '-o', file, '-p', String(pid)],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  tracer.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => tracer.on('exit', () => resolve()));
  // strace says nothing once attached; give it a moment and check that it is still there
  await new Promise((r) => setTimeout(r, 1000));
  if (tracer.exitCode !== null) throw new Error(`strace -p ${pid} could not attach: ${stderr.trim()}`);
  return async () => {
    tracer.kill('SIGINT');
    await exited;
  };
}

function parseStrace(text: string, n: number): Record<string, { calls: number; bytes: number }> {
  const out: Record<string, { calls: number; bytes: number }> = {};
  for (const line of text.split('\n')) {
    const m = /^(?:\d+\s+)?(\w+)\(.*\)\s+=\s+(-?\d+)/.exec(line);
    if (!m) continue;
    const entry = (out[m[1]] ??= { calls: 0, bytes: 0 });
    entry.calls += 1 / n;
    if (Number(m[2]) > 0) entry.bytes += Number(m[2]) / n;
  }
  return out;
}

/**
 * Traces the data-moving system calls of the stub and of this process (every thread) over `n` large
 * requests at concurrency 1. Tracing slows both down; nothing is timed while it runs.
 */
async function straceRun(server: NereidServer, stub: number, n: number): Promise<StraceSummary | string> {
  if (!existsSync(STRACE)) return 'strace is not installed';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-strace-'));
  const run = requester(server, PYTHON, fp32(LARGE));
  await closedLoop(run, 5, 1);
  const detach: (() => Promise<void>)[] = [];
  try {
    detach.push(await attachStrace(stub, path.join(dir, 'stub')));
    detach.push(await attachStrace(process.pid, path.join(dir, 'server')));
    await closedLoop(run, n, 1);
    await new Promise((r) => setTimeout(r, 200));
    for (const d of detach.splice(0)) await d();
    const perRequest: StraceSummary['perRequest'] = {};
    for (const who of ['server', 'stub']) {
      const file = path.join(dir, who);
      perRequest[who] = parseStrace(existsSync(file) ? readFileSync(file, 'utf8') : '', n);
    }
    return { requests: n, perRequest };
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    for (const d of detach) await d();
    rmSync(dir, { recursive: true, force: true });
  }
}

// --- main --------------------------------------------------------------------------------------------

function table(headers: string[], rows: (string | number)[][]): string {
  const lines = [`| ${headers.join(' | ')} |`, `| ${headers.map(() => '---').join(' | ')} |`];
  for (const r of rows) lines.push(`| ${r.join(' | ')} |`);
  return lines.join('\n');
}

const int = (x: number): string => Math.round(x).toLocaleString('en-US');

function tensorName(elements: number): string {
  return elements === 16 ? '16 FP32' : '3x224x224 FP32';
}

function overheadReport(points: Point[]): { text: string; overheadUs: number } {
  const rows: (string | number)[][] = [];
  let overheadUs = NaN;
  for (const elements of [16, LARGE]) {
    for (const concurrency of [1, 16]) {
      const find = (side: string): Point =>
        points.find((p) => p.side === side && p.elements === elements && p.concurrency === concurrency)!;
      const onnx = find(ONNX);
      const py = find(PYTHON);
      // concurrency 1: the latency difference; 16: the difference of time per request (1/throughput)
      const extra =
        concurrency === 1 ? py.p50Us - onnx.p50Us : 1e6 / py.requestsPerSec - 1e6 / onnx.requestsPerSec;
      if (elements === 16 && concurrency === 1) overheadUs = extra;
      rows.push([
        tensorName(elements),
        concurrency,
        int(onnx.p50Us),
        int(onnx.p99Us),
        int(onnx.requestsPerSec),
        int(py.p50Us),
        int(py.p99Us),
        int(py.requestsPerSec),
        (py.p50Us / onnx.p50Us).toFixed(2),
        (py.requestsPerSec / onnx.requestsPerSec).toFixed(2),
        int(extra),
        `${int(onnx.hostCpuUs)} / ${int(py.hostCpuUs)} + ${int(py.stubCpuUs)}`,
      ]);
    }
  }
  const text = table(
    [
      'tensor',
      'conc.',
      'ONNX p50 µs',
      'ONNX p99 µs',
      'ONNX req/s',
      'Python p50 µs',
      'Python p99 µs',
      'Python req/s',
      'p50 Py/ONNX',
      'req/s Py/ONNX',
      'Python − ONNX µs',
      'CPU µs/req: ONNX / Python + stub',
    ],
    rows,
  );
  return { text, overheadUs };
}

function copyReport(reports: CopyReport[]): string {
  const io = (c: IoCounters | undefined, k: keyof IoCounters): string => (c ? int(c[k]) : '–');
  const rows = reports.map((r) => [
    r.side,
    tensorName(r.elements),
    r.requests,
    io(r.host, 'wchar'),
    io(r.host, 'rchar'),
    io(r.stub, 'rchar'),
    io(r.stub, 'wchar'),
    `${io(r.host, 'read_bytes')} / ${io(r.host, 'write_bytes')}`,
    `${io(r.stub, 'read_bytes')} / ${io(r.stub, 'write_bytes')}`,
  ]);
  const lines = [
    table(
      [
        'model',
        'tensor',
        'requests',
        'server wchar/req',
        'server rchar/req',
        'stub rchar/req',
        'stub wchar/req',
        'server read/write_bytes',
        'stub read/write_bytes',
      ],
      rows,
    ),
  ];
  const small = reports.find((r) => r.side === PYTHON && r.elements === 16);
  const large = reports.find((r) => r.side === PYTHON && r.elements === LARGE);
  if (small?.stub && large?.stub) {
    // What a large request adds over a small one is the tensor's trips through the /dev/shm files, give or
    // take the control frames' differences (the small tensor rides inline in them; the large request's
    // descriptors are longer and it adds a FREE frame).
    const bytes = LARGE * 4;
    const copiesOf = (x: number): string => `${int(x)} bytes = ${(x / bytes).toFixed(2)} tensor copies`;
    lines.push(
      '',
      `Large − small, per request (the tensor is ${int(bytes)} bytes):`,
      `- server → stub: the server wrote ${copiesOf(large.host.wchar - small.host.wchar)} (one pwrite into the ` +
        `host→stub file); the stub read ${copiesOf(large.stub.rchar - small.stub.rchar)} (numpy views over its ` +
        'mapping of that file)',
      `- stub → server: the stub wrote ${copiesOf(large.stub.wchar - small.stub.wchar)} (one pwrite into the ` +
        `stub→host file); the server read ${copiesOf(large.host.rchar - small.host.rchar)} (one pread into the ` +
        'response Buffer)',
      'The stub talks on its socket with sendto/recvfrom, which /proc/<pid>/io does not count; the server ' +
        "(libuv's read/write) is counted, so its small-request bytes are the control frames.",
    );
  }
  return lines.join('\n');
}

function straceReport(s: StraceSummary | string): string {
  if (typeof s === 'string') return `strace: not run (${s})`;
  const rows: (string | number)[][] = [];
  for (const [who, calls] of Object.entries(s.perRequest)) {
    for (const [call, v] of Object.entries(calls).sort((a, b) => b[1].bytes - a[1].bytes)) {
      rows.push([who, call, v.calls.toFixed(2), int(v.bytes)]);
    }
  }
  return [
    `strace -f of the server and the stub over ${s.requests} 3x224x224 Python requests at concurrency 1, per request:`,
    table(['process', 'system call', 'calls', 'bytes'], rows),
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '4000' },
      rounds: { type: 'string', default: '7' },
      out: { type: 'string' },
      'no-strace': { type: 'boolean', default: false },
    },
  });
  const requests = Number(values.requests);
  const rounds = Number(values.rounds);

  const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-python-'));
  cpSync(path.join(EXAMPLES, ONNX), path.join(repo, ONNX), { recursive: true });
  // One instance each (onnxruntime's default on CPU is two), so that only the backends differ.
  const onnxConfig = path.join(repo, ONNX, 'config.pbtxt');
  writeFileSync(
    onnxConfig,
    readFileSync(onnxConfig, 'utf8') + '\ninstance_group [ { count: 1, kind: KIND_CPU } ]\n',
  );
  mkdirSync(path.join(repo, PYTHON, '1'), { recursive: true });
  writeFileSync(path.join(repo, PYTHON, 'config.pbtxt'), PYTHON_CONFIG);
  writeFileSync(path.join(repo, PYTHON, '1', 'model.py'), PYTHON_MODEL);

  const server = await Nereid.start({ modelRepository: repo, log: false });
  try {
    const stub = stubPid(`${PYTHON}_0_0`);
    const loadBefore = os.loadavg()[0];
    process.stderr.write(
      `bench/python: backend overhead (${rounds} rounds, load ${loadBefore.toFixed(1)} on ${os.availableParallelism()} CPUs)\n`,
    );
    const points = await backendOverhead(server, stub, requests, rounds);
    process.stderr.write('bench/python: bytes moved per request (/proc/<pid>/io)\n');
    const copyReports = await copies(server, stub, requests);
    const strace = values['no-strace'] ? '--no-strace' : await straceRun(server, stub, 20);
    const loadAfter = os.loadavg()[0];

    const { text, overheadUs } = overheadReport(points);
    const verdict = overheadUs <= 150 ? 'met' : 'NOT met';
    const report = [
      `Python backend (node ${process.version}, ${os.availableParallelism()} CPUs, ` +
        `load average ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after)`,
      '',
      'Identity, one instance each, in-process core API: latency p50/p99 per request, requests/s (median round), ' +
        'Python − ONNX (p50 at concurrency 1, time per request = 1/throughput at 16), CPU per request',
      text,
      '',
      `Python backend overhead at concurrency 1, 16 FP32: ${int(overheadUs)} µs per request over ONNX identity ` +
        `(target ≤ 150 µs: ${verdict})`,
      '',
      'Bytes moved by read/write-family system calls per request (/proc/<pid>/io deltas)',
      copyReport(copyReports),
      '',
      straceReport(strace),
    ].join('\n');
    process.stdout.write(report + '\n');
    if (values.out) {
      writeFileSync(
        values.out,
        JSON.stringify({ loadBefore, loadAfter, points, overheadUs, copies: copyReports, strace }, null, 2),
      );
    }
  } finally {
    await server.close();
    rmSync(repo, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  process.stderr.write(`bench/python: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
