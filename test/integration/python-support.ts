/**
 * Shared by the Python-backend integration tests that build their models in temporary repositories: the
 * checkout's interpreter, a model folder from a model.py text, and what a test checks after a server
 * stopped (no stub process it started is left, no /dev/shm file of its prefix).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelSpec } from './harness.js';
import { ROOT } from './harness.js';

export const VENV_PYTHON = path.join(ROOT, '.venv/bin/python');
const STUB_MARK = 'nereid_python_stub.py';

/** Flags every Python test server takes: the .venv interpreter and a /dev/shm prefix of its own. */
export function pythonFlags(shmPrefix: string): string[] {
  return [
    `--backend-config=python,python-executable=${VENV_PYTHON}`,
    `--backend-config=python,shm-region-prefix-name=${shmPrefix}`,
  ];
}

/** A Python model folder: config.pbtxt plus 1/model.py. */
export function pythonModel(config: string, source: string): ModelSpec {
  return { config, files: { '1/model.py': source } };
}

/** Stub processes that are children of this test process (optionally of one instance). */
export function stubPids(instance?: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const at = cmd.findIndex((a) => a.endsWith(STUB_MARK));
      if (at < 0) continue;
      if (instance === undefined || cmd[at + 1] === instance) pids.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

export const shmFiles = (prefix: string): string[] =>
  readdirSync('/dev/shm').filter((f) => f.startsWith(prefix));

export const i32 = (v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);
export const ints = (b: Buffer): number[] => Array.from(new Int32Array(Uint8Array.from(b).buffer));
