// Loads and runs every generated model with onnxruntime-node (the runtime Nereid serves with), because
// onnxruntime-python accepting a file does not prove the Node binding does. With --bench it also measures
// the densenet stand-ins' images/s at batch 1 and 8 on 2 intra-op threads.
//
// Usage (from the repository root): node examples/verify_models_node.js [--bench]
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ort from 'onnxruntime-node';

const root = fileURLToPath(new URL('..', import.meta.url));
const fixture = (name) => `${root}test/fixtures/models/${name}.onnx`;
const repoModel = (name) => `${root}examples/model_repository/${name}/1/model.onnx`;
const open = (path, options = {}) => ort.InferenceSession.create(path, { intraOpNumThreads: 2, ...options });

const IDENTITY = {
  bool: ['bool', () => Uint8Array.from([1, 0, 1, 1, 0, 0])],
  uint8: ['uint8', () => Uint8Array.from([0, 1, 2, 127, 128, 255])],
  uint16: ['uint16', () => Uint16Array.from([0, 1, 2, 300, 40000, 65535])],
  uint32: ['uint32', () => Uint32Array.from([0, 1, 2, 70000, 4e9, 4294967295])],
  uint64: ['uint64', () => BigUint64Array.from([0n, 1n, 2n, 3n, 2n ** 40n, 2n ** 64n - 1n])],
  int8: ['int8', () => Int8Array.from([-128, -1, 0, 1, 2, 127])],
  int16: ['int16', () => Int16Array.from([-32768, -1, 0, 1, 2, 32767])],
  int32: ['int32', () => Int32Array.from([-(2 ** 31), -1, 0, 1, 2, 2 ** 31 - 1])],
  int64: ['int64', () => BigInt64Array.from([-(2n ** 63n), -1n, 0n, 1n, 2n, 2n ** 63n - 1n])],
  fp16: ['float16', () => Uint16Array.from([0x3c00, 0xc000, 0, 0x7bff, 0x0001, 0x3555])],
  fp32: ['float32', () => Float32Array.from([1.5, -2, 0, 3.25, 1e-3, 1e30])],
  fp64: ['float64', () => Float64Array.from([1.5, -2, 0, 3.25, 1e-300, 1e300])],
  bytes: ['string', () => ['', 'a', 'bc', 'héllo 🙂', '12', 'z'.repeat(100)]],
};

const failures = [];

async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (err) {
    failures.push(name);
    console.log(`FAIL ${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

for (const [suffix, [type, make]] of Object.entries(IDENTITY)) {
  await check(`identity_${suffix}`, async () => {
    const session = await open(fixture(`identity_${suffix}`));
    assert.deepEqual(session.inputNames, ['INPUT0']);
    assert.deepEqual(session.outputNames, ['OUTPUT0']);
    const data = make();
    const { OUTPUT0 } = await session.run({ INPUT0: new ort.Tensor(type, data, [2, 3]) });
    assert.equal(OUTPUT0.type, type);
    assert.deepEqual(OUTPUT0.dims, [2, 3]);
    assert.deepEqual(Array.from(OUTPUT0.data), Array.from(data));
  });
}

// Known limits of onnxruntime-node 1.30, recorded here so a release that lifts them is noticed:
// it has no bfloat16 tensor type and refuses to even create a session whose inputs are bfloat16
// ("Unsupported data type: 16"); and it passes strings through C strings, so a BYTES element is cut at its
// first NUL byte.
await check('identity_bf16 (onnxruntime-node refuses to load it)', async () => {
  try {
    await open(fixture('identity_bf16'));
    console.log('   note: this onnxruntime-node loads bfloat16 models now');
  } catch (err) {
    assert.match(err instanceof Error ? err.message : String(err), /Unsupported data type: 16/);
  }
});

await check('identity_bytes (onnxruntime-node cuts strings at NUL)', async () => {
  const session = await open(fixture('identity_bytes'));
  const { OUTPUT0 } = await session.run({ INPUT0: new ort.Tensor('string', ['a\u0000b', 'c'], [1, 2]) });
  if (OUTPUT0.data[0] === 'a') return;
  assert.equal(OUTPUT0.data[0], 'a\u0000b');
  console.log('   note: this onnxruntime-node keeps NUL bytes in strings now');
});

const iota = (Ctor, n, f) => Ctor.from({ length: n }, (_, i) => f(i));

await check('add_sub_fp32 (fixture and repository)', async () => {
  for (const path of [fixture('add_sub_fp32'), repoModel('add_sub_fp32')]) {
    const session = await open(path);
    const a = iota(Float32Array, 32, (i) => i * 0.5);
    const b = iota(Float32Array, 32, (i) => 1 - i);
    const out = await session.run({
      INPUT0: new ort.Tensor('float32', a, [2, 16]),
      INPUT1: new ort.Tensor('float32', b, [2, 16]),
    });
    assert.deepEqual(Array.from(out.OUTPUT0.data), Array.from(iota(Float32Array, 32, (i) => a[i] + b[i])));
    assert.deepEqual(Array.from(out.OUTPUT1.data), Array.from(iota(Float32Array, 32, (i) => a[i] - b[i])));
  }
});

await check('simple', async () => {
  const session = await open(repoModel('simple'));
  const a = iota(Int32Array, 16, (i) => i);
  const b = iota(Int32Array, 16, () => 1);
  const out = await session.run({
    INPUT0: new ort.Tensor('int32', a, [1, 16]),
    INPUT1: new ort.Tensor('int32', b, [1, 16]),
  });
  assert.deepEqual(Array.from(out.OUTPUT0.data), Array.from(iota(Int32Array, 16, (i) => i + 1)));
  assert.deepEqual(Array.from(out.OUTPUT1.data), Array.from(iota(Int32Array, 16, (i) => i - 1)));
});

await check('simple_int8 (wraps around like int8 arithmetic)', async () => {
  const session = await open(repoModel('simple_int8'));
  const a = iota(Int8Array, 16, (i) => [100, -100][i % 2]);
  const b = iota(Int8Array, 16, () => 100);
  const out = await session.run({
    INPUT0: new ort.Tensor('int8', a, [1, 16]),
    INPUT1: new ort.Tensor('int8', b, [1, 16]),
  });
  assert.deepEqual(Array.from(out.OUTPUT0.data), Array.from(iota(Int8Array, 16, (i) => a[i] + b[i])));
  assert.deepEqual(Array.from(out.OUTPUT1.data), Array.from(iota(Int8Array, 16, (i) => a[i] - b[i])));
});

await check('simple_string', async () => {
  const session = await open(repoModel('simple_string'));
  const a = Array.from({ length: 32 }, (_, i) => String(i * 3 - 20));
  const b = Array.from({ length: 32 }, () => '7');
  const out = await session.run({
    INPUT0: new ort.Tensor('string', a, [2, 16]),
    INPUT1: new ort.Tensor('string', b, [2, 16]),
  });
  assert.deepEqual(
    out.OUTPUT0.data,
    a.map((x) => String(Number(x) + 7)),
  );
  assert.deepEqual(
    out.OUTPUT1.data,
    a.map((x) => String(Number(x) - 7)),
  );
});

const picture = (batch) => iota(Float32Array, batch * 3 * 224 * 224, (i) => Math.sin(i * 0.001 + (i % 7)));

await check('densenet_onnx', async () => {
  const session = await open(repoModel('densenet_onnx'));
  assert.deepEqual(session.inputNames, ['data_0']);
  assert.deepEqual(session.outputNames, ['fc6_1']);
  const { fc6_1 } = await session.run({ data_0: new ort.Tensor('float32', picture(1), [1, 3, 224, 224]) });
  assert.deepEqual(fc6_1.dims, [1, 1000, 1, 1]);
  assert.ok(fc6_1.data.every(Number.isFinite));
});

await check('densenet_batched (batch 3 row 0 equals densenet_onnx)', async () => {
  const single = await open(repoModel('densenet_onnx'));
  const batched = await open(repoModel('densenet_batched'));
  const images = picture(3);
  const { fc6_1 } = await batched.run({ data_0: new ort.Tensor('float32', images, [3, 3, 224, 224]) });
  assert.deepEqual(fc6_1.dims, [3, 1000]);
  const first = await single.run({
    data_0: new ort.Tensor('float32', images.subarray(0, 3 * 224 * 224), [1, 3, 224, 224]),
  });
  for (let i = 0; i < 1000; i++) assert.ok(Math.abs(first.fc6_1.data[i] - fc6_1.data[i]) < 1e-3);
});

await check('identity_fp32 (repository)', async () => {
  const session = await open(repoModel('identity_fp32'));
  const { OUTPUT0 } = await session.run({
    INPUT0: new ort.Tensor('float32', Float32Array.of(1, 2, 3), [1, 3]),
  });
  assert.deepEqual(Array.from(OUTPUT0.data), [1, 2, 3]);
});

// The hand-written config.pbtxt files must name exactly the tensors the generated graphs have (the models
// generate_models.py writes; sequence models declare their control inputs outside `input [...]`).
const configNames = (text, section) => {
  const block = text.split(new RegExp(`^${section} \\[`, 'm'))[1]?.split(/^\]/m)[0] ?? '';
  return [...block.matchAll(/^\s*name: "([^"]+)"/gm)].map((m) => m[1]);
};
const GENERATED = [
  'add_sub_fp32',
  'densenet_batched',
  'densenet_onnx',
  'identity_fp32',
  'simple',
  'simple_int8',
  'simple_string',
];
for (const name of GENERATED) {
  await check(`${name} config.pbtxt matches the graph`, async () => {
    const text = readFileSync(`${root}examples/model_repository/${name}/config.pbtxt`, 'utf8');
    assert.match(text, new RegExp(`^name: "${name}"$`, 'm'));
    const session = await open(repoModel(name));
    assert.deepEqual(configNames(text, 'input'), session.inputNames);
    assert.deepEqual(configNames(text, 'output'), session.outputNames);
  });
}

await check('slow_fp32', async () => {
  const session = await open(fixture('slow_fp32'), { intraOpNumThreads: 1 });
  const start = performance.now();
  const { OUTPUT0 } = await session.run({
    INPUT0: new ort.Tensor('float32', new Float32Array(16).fill(0.5), [1, 16]),
  });
  const seconds = (performance.now() - start) / 1000;
  assert.deepEqual(OUTPUT0.dims, [1, 16]);
  assert.ok(OUTPUT0.data.every(Number.isFinite));
  console.log(`   ${seconds.toFixed(2)} s on one intra-op thread`);
});

await check('corrupt (load must fail)', async () => {
  await assert.rejects(open(fixture('corrupt')));
});

if (process.argv.includes('--bench')) {
  for (const name of ['densenet_onnx', 'densenet_batched']) {
    const session = await open(repoModel(name), { interOpNumThreads: 1 });
    for (const batch of name === 'densenet_onnx' ? [1] : [1, 8]) {
      const input = { data_0: new ort.Tensor('float32', picture(batch), [batch, 3, 224, 224]) };
      for (let i = 0; i < 5; i++) await session.run(input);
      const latencies = [];
      const start = performance.now();
      while (performance.now() - start < 10_000) {
        const t = performance.now();
        await session.run(input);
        latencies.push(performance.now() - t);
      }
      const mean = (latencies.length * batch) / ((performance.now() - start) / 1000);
      latencies.sort((x, y) => x - y);
      const p10 = (batch * 1000) / latencies[Math.floor(latencies.length / 10)];
      console.log(
        `bench ${name} batch ${batch}: ${mean.toFixed(1)} images/s mean, ${p10.toFixed(1)} images/s ` +
          'from the 10th-percentile latency (2 intra-op threads)',
      );
    }
  }
}

if (failures.length > 0) {
  console.log(`${failures.length} failed: ${failures.join(', ')}`);
  process.exitCode = 1;
}
