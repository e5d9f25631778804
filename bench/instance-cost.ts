/**
 * What one model instance costs, per backend: a server in this process loads a tiny model with `count: N`
 * instances over HTTP, and the script prints how much the process's resident memory, its thread count and
 * its children's resident memory (Python stubs) grew, per instance. These numbers are the basis of the
 * default instance limits (src/core/model/instance-budget.ts, docs/security.md#instances).
 *
 *   node dist/bench/instance-cost.js [count=16]
 *
 * Loopback only, about a minute on the 2-core development machine. Numbers vary with load and versions.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { makeRepository, post, removeRepository, startServer, ROOT } from '../test/integration/harness.js';

const count = Number(process.argv[2] ?? 16);

const rssMiB = (pid: number | 'self'): number => {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
};
const threads = (): number => readdirSync('/proc/self/task').length;

/** Resident memory of this process's children (Python stubs), MiB. */
function childrenMiB(): number {
  let total = 0;
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid)
        total += rssMiB(Number(e));
    } catch {
      // gone while we looked
    }
  }
  return total;
}

const io = `max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]`;
const group = (n: number): string => `instance_group [ { count: ${n} kind: KIND_CPU } ]`;

const kinds = {
  onnxruntime: {
    config: `backend: "onnxruntime"\nmax_batch_size: 0\n${group(count)}`,
    onnx: 'identity_fp32.onnx',
  },
  javascript: {
    config: `backend: "javascript"\n${io}\n${group(count)}`,
    files: { '1/model.js': 'export default class { execute(r) { return r.map(() => ({})); } }' },
  },
  python: {
    config: `backend: "python"\n${io}\n${group(Math.min(count, 8))}`,
    files: {
      '1/model.py': 'class TritonPythonModel:\n    def execute(self, requests):\n        return []\n',
    },
  },
};

for (const [kind, spec] of Object.entries(kinds)) {
  const n = kind === 'python' ? Math.min(count, 8) : count;
  const repo = makeRepository({ m: spec });
  const server = await startServer([
    `--model-repository=${repo}`,
    '--model-control-mode=explicit',
    `--max-instances-per-model=${n}`,
    `--backend-config=python,python-executable=${path.join(ROOT, '.venv/bin/python')}`,
  ]);
  const before = { rss: rssMiB('self'), threads: threads(), children: childrenMiB() };
  const res = await post(`${server.url}/v2/repository/models/m/load`, {});
  if (res.status !== 200) throw new Error(`${kind}: ${res.body.toString()}`);
  const grew = rssMiB('self') - before.rss + childrenMiB() - before.children;
  console.log(
    `${kind.padEnd(12)} ${String(n).padStart(3)} instances: +${(grew / n).toFixed(1)} MiB and +${((threads() - before.threads) / n).toFixed(1)} threads per instance`,
  );
  await server.stop();
  removeRepository(repo);
}
