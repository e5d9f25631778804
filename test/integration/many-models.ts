/**
 * A repository of many small models for on-demand mode's tests and benchmark (bench/on-demand.ts): ONNX
 * identities and Python echoes, all with INPUT0 → OUTPUT0 INT32 [batch, 1], so one request body serves
 * every model. A Python model sleeps -v ms when its input is a negative v (a request that keeps it busy).
 * A Zipf sampler picks the models of a request stream.
 */
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync } from 'node:fs';
import { FIXTURES } from './harness.js';

export const PY_SOURCE = `
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            v = int(x.reshape(-1)[0])
            if v < 0:
                time.sleep(-v / 1000.0)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", x.astype(np.int32))]))
        return out
`;

const config = (name: string, backend: string, extra = ''): string => `
name: "${name}"
backend: "${backend}"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
${extra}`;

export interface ManyModels {
  readonly repo: string;
  readonly names: readonly string[];
  readonly backendOf: ReadonlyMap<string, 'onnx' | 'python'>;
}

/** `onnx` ONNX models m000.. then `python` Python models; plus any `extra` folders (name → config). */
export function makeManyModels(
  onnx: number,
  python: number,
  pinnedByConfig: readonly string[] = [],
): ManyModels {
  const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-many-'));
  const names: string[] = [];
  const backendOf = new Map<string, 'onnx' | 'python'>();
  const pinParam = 'parameters { key: "nereid.pinned" value: { string_value: "true" } }';
  for (let i = 0; i < onnx + python; i++) {
    const name = `m${String(i).padStart(3, '0')}`;
    const isOnnx = i < onnx;
    const dir = path.join(repo, name);
    mkdirSync(path.join(dir, '1'), { recursive: true });
    const extra = pinnedByConfig.includes(name) ? pinParam : '';
    writeFileSync(path.join(dir, 'config.pbtxt'), config(name, isOnnx ? 'onnxruntime' : 'python', extra));
    if (isOnnx) cpSync(path.join(FIXTURES, 'identity_int32.onnx'), path.join(dir, '1', 'model.onnx'));
    else writeFileSync(path.join(dir, '1', 'model.py'), PY_SOURCE);
    names.push(name);
    backendOf.set(name, isOnnx ? 'onnx' : 'python');
  }
  return { repo, names, backendOf };
}

/** The infer body for value v. */
export const inferBody = (v: number): string =>
  JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1], data: [v] }] });

/**
 * A deterministic Zipf(s) sampler over `n` ranks (rank 0 most frequent), from a seeded PRNG, so a test's
 * stream is the same on every run.
 */
export function zipfSampler(n: number, s: number, seed: number): () => number {
  const weights = Array.from({ length: n }, (_, k) => 1 / (k + 1) ** s);
  const total = weights.reduce((a, b) => a + b, 0);
  const cdf: number[] = [];
  let acc = 0;
  for (const w of weights) cdf.push((acc += w / total));
  let state = seed >>> 0 || 1;
  const rand = (): number => {
    // xorshift32
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 0x100000000;
  };
  return () => {
    const u = rand();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/** Shuffles ranks to names deterministically, so hot models are a mix of ONNX and Python. */
export function rankOrder(names: readonly string[], seed: number): string[] {
  const out = [...names];
  let state = seed >>> 0 || 7;
  for (let i = out.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
