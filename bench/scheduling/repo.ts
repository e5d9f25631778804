/**
 * Builds the dynamic-batching benchmark's model repository (bench/scheduling/run.sh): the densenet_batched
 * example and a small MLP (written by test/integration/tiny-onnx.ts), each twice — without a scheduler
 * config (Triton's default scheduler: every request runs alone) and with `dynamic_batching` — all with one
 * CPU instance, so they compare with one bare onnxruntime session. The MLP runs on one intra-op thread
 * (`intra_op_thread_count: 1`, see MLP_THREADS), served and bare alike. Configs are complete, for a server run
 * with --disable-auto-complete-config (auto-complete would add dynamic batching to every batchable model).
 * Also writes the MLP's .onnx for the bare runs.
 *
 * Usage: node dist/bench/scheduling/repo.js --out <dir> --delay-us <max_queue_delay_microseconds>
 *        node dist/bench/scheduling/repo.js --print-mlp-threads   (for the bare run)
 *        node dist/bench/scheduling/repo.js --print-mlp-inputs    (for the echo's request size)
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { mlpModel } from '../../test/integration/tiny-onnx.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const DENSENET = path.join(ROOT, 'examples/model_repository/densenet_batched');

/** The MLP's shape: 64 inputs, two hidden layers of 256, 16 outputs. */
export const MLP = { inputs: 64, hidden: 256, outputs: 16, maxBatch: 32 } as const;

/**
 * Intra-op threads for the MLP, how one would deploy a model this small on CPU: a batch of 32 rows is ~60
 * µs of work, too little to split across cores, and the default (every core) leaves onnxruntime's pool
 * thread spinning after each run on the core the event loop needs. Measured on 2 cores, gRPC,
 * concurrency 32: dynamic batching 8.6k inf/s with 2 threads, 14.7k-18.1k with 1 (docs/onnxruntime.md).
 */
export const MLP_THREADS = 1;

function config(name: string, body: string, dynamicBatching: string | undefined): string {
  const batching = dynamicBatching === undefined ? '' : `dynamic_batching { ${dynamicBatching} }\n`;
  return `name: "${name}"\nplatform: "onnxruntime_onnx"\n${body}instance_group [ { kind: KIND_CPU count: 1 } ]\n${batching}`;
}

const densenetBody = `max_batch_size: 8
input [ { name: "data_0" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 224, 224 ] } ]
output [ { name: "fc6_1" data_type: TYPE_FP32 dims: [ 1000 ] label_filename: "densenet_labels.txt" } ]
`;

const mlpBody = `max_batch_size: ${MLP.maxBatch}
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ ${MLP.inputs} ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ ${MLP.outputs} ] } ]
parameters { key: "intra_op_thread_count" value: { string_value: "${MLP_THREADS}" } }
`;

/** Nereid's early dispatch (docs/scheduling.md): the same batcher, without waiting when nobody can join. */
const EARLY_DISPATCH = `parameters { key: "dynamic_batching_early_dispatch" value: { string_value: "true" } }
`;

function main(): void {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      'delay-us': { type: 'string', default: '2000' },
      'print-mlp-threads': { type: 'boolean', default: false },
      'print-mlp-inputs': { type: 'boolean', default: false },
    },
  });
  if (values['print-mlp-threads']) {
    console.log(MLP_THREADS);
    return;
  }
  if (values['print-mlp-inputs']) {
    console.log(MLP.inputs);
    return;
  }
  if (!values.out) throw new Error('--out is required');
  const delayUs = Number(values['delay-us']);
  if (!Number.isSafeInteger(delayUs) || delayUs < 0) throw new Error('--delay-us must be an integer >= 0');
  const dyn = `max_queue_delay_microseconds: ${delayUs}`;
  const mlp = mlpModel(MLP.inputs, MLP.hidden, MLP.outputs);
  const models: [string, string, string | undefined][] = [
    ['densenet_unbatched', densenetBody, undefined],
    ['densenet_dynamic', densenetBody, dyn],
    ['densenet_early', densenetBody + EARLY_DISPATCH, dyn],
    ['mlp_unbatched', mlpBody, undefined],
    ['mlp_dynamic', mlpBody, dyn],
    ['mlp_early', mlpBody + EARLY_DISPATCH, dyn],
  ];
  for (const [name, body, batching] of models) {
    const dir = path.join(values.out, name);
    mkdirSync(path.join(dir, '1'), { recursive: true });
    writeFileSync(path.join(dir, 'config.pbtxt'), config(name, body, batching));
    if (name.startsWith('densenet')) {
      copyFileSync(path.join(DENSENET, '1/model.onnx'), path.join(dir, '1/model.onnx'));
      copyFileSync(path.join(DENSENET, 'densenet_labels.txt'), path.join(dir, 'densenet_labels.txt'));
    } else {
      writeFileSync(path.join(dir, '1/model.onnx'), mlp);
    }
  }
  writeFileSync(path.join(values.out, 'mlp.onnx'), mlp);
}

main();
