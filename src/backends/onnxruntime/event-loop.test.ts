/**
 * `execution_thread: "event_loop"`: the same answers and errors as a worker-thread instance, from a
 * session that really runs on the main thread.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { NereidError } from '../../common/errors.js';
import { decodeLogMessage, Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import { OnnxRuntimeBackend } from './backend.js';
import { OrtInstance } from './instance.js';
import {
  addSubConfig,
  fixture,
  fp32,
  identityConfig,
  instanceSpec,
  loadContext,
  modelConfig,
  readFp32,
  request,
  sample,
  slowConfig,
} from './onnxruntime.testkit.js';

const backend = new OnnxRuntimeBackend();
const EVENT_LOOP = { parameters: { execution_thread: { string_value: 'event_loop' } } };

void describe('event-loop instances', () => {
  for (const dt of ['FP32', 'INT64', 'FP16', 'BYTES'] as const) {
    void test(`${dt} identity: bytes come back equal, alone and batched`, async () => {
      const model = await backend.loadModel(
        loadContext(identityConfig(dt, EVENT_LOOP), fixture(`identity_${dt.toLowerCase()}.onnx`)),
      );
      const inst = await model.createInstance(instanceSpec(`identity_${dt}`));
      try {
        assert.ok(inst instanceof OrtInstance);
        assert.equal(inst.thread, 'event_loop');
        const lone = sample(dt, 2);
        const before = Buffer.from(lone.data);
        const r = request('lone', [lone], ['OUTPUT0'], 2);
        await inst.execute([r]);
        const out = r.sender.outputs().get('OUTPUT0')!;
        assert.deepEqual(out.shape, [2, 3]);
        assert.ok(out.data.equals(before));
        assert.ok(lone.data.equals(before), 'the input buffer is left intact');

        const parts = [sample(dt, 1), sample(dt, 3)];
        const reqs = parts.map((p, i) => request(`b${i}`, [p], ['OUTPUT0'], p.shape[0]));
        await inst.execute(reqs);
        reqs.forEach((q, i) => assert.ok(q.sender.outputs().get('OUTPUT0')!.data.equals(parts[i].data)));
      } finally {
        await inst.close();
        await model.unload();
      }
    });
  }

  void test('an ORT failure is INTERNAL with ORT’s message, and the instance goes on serving', async () => {
    const config = addSubConfig(EVENT_LOOP);
    const model = await backend.loadModel(loadContext(config, fixture('add_sub_fp32.onnx')));
    const inst = await model.createInstance(instanceSpec('add_sub_fp32'));
    const ones = Array.from({ length: 16 }, () => 1);
    try {
      // Shapes the core would never pass: ORT's Add refuses to broadcast 16 with 3.
      const bad = request(
        'bad',
        [fp32('INPUT0', [1, 16], ones), fp32('INPUT1', [1, 3], [1, 2, 3])],
        ['OUTPUT0'],
      );
      await inst.execute([bad]);
      assert.equal(bad.sender.error?.code, 'INTERNAL');
      assert.match(bad.sender.error.message, /onnx runtime error/);

      const good = request(
        'good',
        [fp32('INPUT0', [1, 16], ones), fp32('INPUT1', [1, 16], ones)],
        ['OUTPUT0'],
      );
      await inst.execute([good]);
      assert.deepEqual(
        readFp32(good.sender.outputs().get('OUTPUT0')!),
        ones.map(() => 2),
      );
    } finally {
      await inst.close();
      await model.unload();
    }
  });

  void test('a lone input that fills its own buffer is read in place: not copied, moved or kept', async () => {
    const model = await backend.loadModel(
      loadContext(addSubConfig(EVENT_LOOP), fixture('add_sub_fp32.onnx')),
    );
    const inst = await model.createInstance(instanceSpec('add_sub_fp32'));
    // fp32() wraps a whole ArrayBuffer of its own: the instance hands it to onnxruntime as it is.
    const a = fp32(
      'INPUT0',
      [1, 16],
      Array.from({ length: 16 }, (_, i) => i),
    );
    const b = fp32(
      'INPUT1',
      [1, 16],
      Array.from({ length: 16 }, () => 1),
    );
    assert.equal(a.data.byteLength, a.data.buffer.byteLength);
    try {
      const first = request('first', [a, b], ['OUTPUT0', 'OUTPUT1']);
      await inst.execute([first]);
      const sum = first.sender.outputs().get('OUTPUT0')!;
      assert.deepEqual(
        readFp32(sum),
        Array.from({ length: 16 }, (_, i) => i + 1),
      );
      assert.deepEqual(
        readFp32(first.sender.outputs().get('OUTPUT1')!),
        Array.from({ length: 16 }, (_, i) => i - 1),
      );
      // Still attached and unchanged, and the outputs live in buffers of their own.
      assert.equal(a.data.buffer.byteLength, 64);
      assert.deepEqual(
        readFp32(a),
        Array.from({ length: 16 }, (_, i) => i),
      );
      assert.notEqual(sum.data.buffer, a.data.buffer);
      assert.notEqual(sum.data.buffer, b.data.buffer);

      // The same buffers, new values: the next run reads them afresh, the first answer stays as it was.
      new Float32Array(a.data.buffer).fill(10);
      const second = request('second', [a, b], ['OUTPUT0']);
      await inst.execute([second]);
      assert.deepEqual(
        readFp32(second.sender.outputs().get('OUTPUT0')!),
        Array.from({ length: 16 }, () => 11),
      );
      assert.deepEqual(
        readFp32(sum),
        Array.from({ length: 16 }, (_, i) => i + 1),
      );
    } finally {
      await inst.close();
      await model.unload();
    }
  });

  void test('a corrupt file fails the load with INTERNAL naming the file', async () => {
    const config = modelConfig({
      name: 'corrupt',
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [16] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [16] }],
      ...EVENT_LOOP,
    });
    await assert.rejects(
      backend.loadModel(loadContext(config, fixture('corrupt.onnx'))),
      (e: NereidError) => e.code === 'INTERNAL' && e.message.includes('corrupt.onnx'),
    );
  });

  void test('the run really happens on the event loop: a slow model holds it, and that is reported once', async () => {
    const config = slowConfig(1, EVENT_LOOP);
    const warnings: string[] = [];
    const ctx = {
      ...loadContext(config, fixture('slow_fp32.onnx')),
      log: new Logger({}, (l) => warnings.push(l)),
    };
    const model = await backend.loadModel(ctx);
    const inst = await model.createInstance(instanceSpec('slow_fp32'));
    const input = (): Tensor =>
      fp32(
        'INPUT0',
        [1, 16],
        Array.from({ length: 16 }, (_, i) => i / 16),
      );
    try {
      await inst.execute([request('warm', [input()], ['OUTPUT0'])]);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 5);
      const started = performance.now();
      const r = request('slow', [input()], ['OUTPUT0']);
      await inst.execute([r]);
      const took = performance.now() - started;
      clearInterval(timer);
      assert.equal(r.sender.outputs().get('OUTPUT0')!.shape.length, 2);
      assert.ok(took > 150, `the slow model must actually be slow here (took ${took.toFixed(0)} ms)`);
      // On a worker the 5 ms timer would fire ~took/5 times; on the event loop it cannot fire during the run.
      assert.ok(ticks <= 2, `${ticks} timer ticks during a ${took.toFixed(0)} ms run on the event loop`);
      const slow = warnings.map(decodeLogMessage).filter((w) => w.includes('on the event loop'));
      assert.equal(slow.length, 1, `one warning for two slow runs: ${JSON.stringify(warnings)}`);
      assert.match(slow[0], /slow_fp32_0_0.*execution_thread "event_loop"/);
    } finally {
      await inst.close();
      await model.unload();
    }
  });

  void test('--backend-config=onnxruntime,execution_thread=event_loop moves models that name no thread', async () => {
    const everywhere = { execution_thread: 'event_loop' };
    const threadOf = async (config: ReturnType<typeof identityConfig>): Promise<string> => {
      const model = await backend.loadModel(loadContext(config, fixture('identity_fp32.onnx'), everywhere));
      const inst = await model.createInstance(instanceSpec('identity_FP32'));
      try {
        assert.ok(inst instanceof OrtInstance);
        const input = sample('FP32', 2);
        const r = request('r', [input], ['OUTPUT0'], 2);
        await inst.execute([r]);
        assert.ok(r.sender.outputs().get('OUTPUT0')!.data.equals(input.data));
        return inst.thread;
      } finally {
        await inst.close();
        await model.unload();
      }
    };
    assert.equal(await threadOf(identityConfig('FP32')), 'event_loop');
    const ownChoice = { parameters: { execution_thread: { string_value: 'worker' } } };
    assert.equal(await threadOf(identityConfig('FP32', ownChoice)), 'worker', "the model's own choice wins");
  });
});
