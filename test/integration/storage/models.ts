/**
 * The model files the object-store tests put into a repository, as `key → content` maps (keys relative to
 * the repository folder), and the in-process Nereid those tests start: real servers on port 0 with the
 * store's cloud settings.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startNereid } from '../../../src/compose/compose.js';
import { parseFlags } from '../../../src/compose/flags.js';
import type { CloudStorageSettings } from '../../../src/compose/options.js';
import { Logger } from '../../../src/common/logger.js';
import { FIXTURES, post, request, type TestServer } from '../harness.js';

export type Files = Record<string, string | Buffer>;

const IDENTITY = readFileSync(path.join(FIXTURES, 'identity_fp32.onnx'));

export function identityConfig(name: string, extra = ''): string {
  return [
    `name: "${name}"`,
    'backend: "onnxruntime"',
    'max_batch_size: 0',
    'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]',
    'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]',
    extra,
  ].join('\n');
}

/** An identity ONNX model with the given version folders. */
export function identityModel(name: string, versions: number[] = [1], extra = ''): Files {
  const files: Files = { [`${name}/config.pbtxt`]: identityConfig(name, extra) };
  for (const v of versions) files[`${name}/${v}/model.onnx`] = IDENTITY;
  return files;
}

/** A Python model whose answer depends on two extra files: one beside model.py, one at the model root. */
export function pythonModel(name: string): Files {
  return {
    [`${name}/config.pbtxt`]: [
      `name: "${name}"`,
      'backend: "python"',
      'max_batch_size: 0',
      'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]',
      'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]',
    ].join('\n'),
    [`${name}/1/model.py`]: [
      'import os',
      'import numpy as np',
      'import triton_python_backend_utils as pb_utils',
      '',
      'class TritonPythonModel:',
      '    def initialize(self, args):',
      '        root = args["model_repository"]',
      '        with open(os.path.join(root, args["model_version"], "data", "offset.txt")) as f:',
      '            self.offset = float(f.read())',
      '        with open(os.path.join(root, "extra", "scale.txt")) as f:',
      '            self.scale = float(f.read())',
      '',
      '    def execute(self, requests):',
      '        out = []',
      '        for r in requests:',
      '            x = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()',
      '            y = (x * self.scale + self.offset).astype(np.float32)',
      '            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", y)]))',
      '        return out',
      '',
    ].join('\n'),
    [`${name}/1/data/offset.txt`]: '100',
    [`${name}/extra/scale.txt`]: '3',
  };
}

/** A TypeScript model that imports a second module from its version folder. */
export function javascriptModel(name: string): Files {
  return {
    [`${name}/config.pbtxt`]: [
      `name: "${name}"`,
      'backend: "javascript"',
      'max_batch_size: 0',
      'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]',
      'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]',
    ].join('\n'),
    [`${name}/1/model.ts`]: [
      "import { Tensor, type InferenceRequest, type InferenceResponseInit } from 'nereid-server';",
      "import { FACTOR } from './lib/factor.js';",
      '',
      'export default class Scale {',
      '  execute(requests: InferenceRequest[]): InferenceResponseInit[] {',
      '    return requests.map((r) => {',
      "      const x = r.input('INPUT0')!.float32();",
      '      const y = Float32Array.from(x, (v) => v * FACTOR);',
      "      return { outputs: [Tensor.from('OUTPUT0', y, { shape: r.input('INPUT0')!.shape })] };",
      '    });',
      '  }',
      '}',
      '',
    ].join('\n'),
    [`${name}/1/lib/factor.ts`]: 'export const FACTOR = 7;\n',
  };
}

/** An ensemble of one step: `member` (an identity model). */
export function ensembleModel(name: string, member: string): Files {
  return {
    [`${name}/config.pbtxt`]: [
      `name: "${name}"`,
      'platform: "ensemble"',
      'max_batch_size: 0',
      'input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]',
      'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]',
      'ensemble_scheduling { step [ {',
      `  model_name: "${member}" model_version: -1`,
      '  input_map { key: "INPUT0" value: "IN" }',
      '  output_map { key: "OUTPUT0" value: "OUT" }',
      '} ] }',
    ].join('\n'),
    [`${name}/1/.keep`]: '',
  };
}

export interface StoreServer extends TestServer {
  readonly logs: string[];
}

/** Starts Nereid in-process on port 0 with tritonserver-style flags and the store's cloud settings. */
export async function startWith(cloudStorage: CloudStorageSettings, args: string[]): Promise<StoreServer> {
  const { options } = parseFlags([
    '--http-port=0',
    '--http-address=127.0.0.1',
    '--allow-grpc=false',
    '--allow-metrics=false',
    ...args,
  ]);
  const logs: string[] = [];
  const log = new Logger({}, (line) => logs.push(line));
  const running = await startNereid(Object.freeze({ ...options, cloudStorage }), log);
  return {
    url: `http://127.0.0.1:${running.http!.port}`,
    running,
    logs,
    stop: () => running.stop(),
  };
}

export interface IndexEntry {
  name: string;
  version?: string;
  state?: string;
  reason?: string;
}

export async function repositoryIndex(url: string): Promise<IndexEntry[]> {
  return (await post(`${url}/v2/repository/index`, {})).json<IndexEntry[]>();
}

/** READY versions of a model, ascending, from the index. */
export async function readyVersions(url: string, model: string): Promise<number[]> {
  return (await repositoryIndex(url))
    .filter((e) => e.name === model && e.state === 'READY')
    .map((e) => Number(e.version))
    .sort((a, b) => a - b);
}

/** Runs one FP32 vector through `model` (an input named `input`), returning the output or the error. */
export async function infer(
  url: string,
  model: string,
  data: number[],
  names: { input?: string; output?: string; version?: string } = {},
): Promise<{ status: number; data?: number[]; error?: string }> {
  const path = names.version ? `${model}/versions/${names.version}` : model;
  const res = await post(`${url}/v2/models/${path}/infer`, {
    inputs: [{ name: names.input ?? 'INPUT0', shape: [1, data.length], datatype: 'FP32', data }],
  });
  const body = res.json<{ outputs?: { name: string; data: number[] }[]; error?: string }>();
  const out = body.outputs?.find((o) => o.name === (names.output ?? 'OUTPUT0'));
  return { status: res.status, data: out?.data, error: body.error };
}

export async function modelReady(url: string, model: string): Promise<boolean> {
  return (await request(`${url}/v2/models/${model}/ready`)).status === 200;
}
