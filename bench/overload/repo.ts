/**
 * Writes the overload benchmark's model repository (bench/overload/run.sh). Both models are Triton's
 * `identity` test backend, whose execute_delay_ms is a timer rather than CPU work, so the server's capacity
 * does not depend on how busy this shared machine is:
 * - queued: dynamic batching with `max_queue_size: 8` (issue 23's model), batches of up to 8 rows taking
 *   20 ms each on one instance: about 400 inferences/s, and fast 503s beyond that;
 * - big: any-length FP32 vector, no delay, for the large JSON bodies.
 *
 * Usage: node dist/bench/overload/repo.js --out <dir>
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const MODELS: Readonly<Record<string, string>> = {
  queued: `name: "queued"
backend: "identity"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
dynamic_batching { default_queue_policy { max_queue_size: 8 } }
parameters { key: "execute_delay_ms" value: { string_value: "20" } }
`,
  big: `name: "big"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`,
};

const { values } = parseArgs({ options: { out: { type: 'string' } } });
if (values.out === undefined) throw new Error('--out is required');
for (const [name, config] of Object.entries(MODELS)) {
  mkdirSync(path.join(values.out, name, '1'), { recursive: true });
  writeFileSync(path.join(values.out, name, 'config.pbtxt'), config);
}
