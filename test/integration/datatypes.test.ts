// JSON and binary inference for every Triton datatype through auto-completed identity models.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ALL_DATATYPES, byteSizeOf, type DataType } from '../../src/common/datatype.js';
import { joinBytesElements, splitBytesElements } from '../../src/common/tensor.js';
import {
  binaryBody,
  makeRepository,
  post,
  removeRepository,
  request,
  splitBinaryResponse,
  startServer,
  type TestServer,
} from './harness.js';

// onnxruntime-node 1.30 has no bfloat16 tensor type: that model must fail to load cleanly (see below).
const SERVED = ALL_DATATYPES.filter((d) => d !== 'BF16');
const modelOf = (d: DataType): string => `identity_${d.toLowerCase()}`;

/** Deterministic sample values for a datatype, as JSON values and as raw bytes. */
function sample(d: DataType, n: number): { json: (number | boolean | string)[]; raw: Buffer } {
  const json: (number | boolean | string)[] = [];
  for (let i = 0; i < n; i++) {
    switch (d) {
      case 'BOOL':
        json.push(i % 3 === 0);
        break;
      case 'BYTES':
        json.push(`text-${i}-\u00e9`);
        break;
      case 'FP32':
      case 'FP64':
        json.push(i * 1.5 - 4);
        break;
      case 'UINT8':
      case 'UINT16':
      case 'UINT32':
      case 'UINT64':
        json.push(i * 3 + 1);
        break;
      default:
        json.push(i * 3 - 7);
    }
  }
  if (d === 'BYTES') return { json, raw: joinBytesElements(json as string[]) };
  const size = byteSizeOf(d);
  const raw = Buffer.alloc(n * size);
  json.forEach((v, i) => {
    const o = i * size;
    switch (d) {
      case 'BOOL':
        raw.writeUInt8(v ? 1 : 0, o);
        break;
      case 'UINT8':
        raw.writeUInt8(v as number, o);
        break;
      case 'INT8':
        raw.writeInt8(v as number, o);
        break;
      case 'UINT16':
      case 'FP16': // arbitrary 16-bit patterns pass through an identity unchanged
        raw.writeUInt16LE(((v as number) + 0x3c00) & 0xffff, o);
        break;
      case 'INT16':
        raw.writeInt16LE(v as number, o);
        break;
      case 'UINT32':
        raw.writeUInt32LE(v as number, o);
        break;
      case 'INT32':
        raw.writeInt32LE(v as number, o);
        break;
      case 'UINT64':
        raw.writeBigUInt64LE(BigInt(v), o);
        break;
      case 'INT64':
        raw.writeBigInt64LE(BigInt(v), o);
        break;
      case 'FP32':
        raw.writeFloatLE(v as number, o);
        break;
      case 'FP64':
        raw.writeDoubleLE(v as number, o);
        break;
    }
  });
  return { json, raw };
}

describe('every datatype over HTTP', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    const models: Record<string, { onnx: string }> = {};
    for (const d of ALL_DATATYPES) models[modelOf(d)] = { onnx: `${modelOf(d)}.onnx` };
    repo = makeRepository(models); // no config.pbtxt: everything comes from auto-complete
    s = await startServer([
      `--model-repository=${repo}`,
      '--exit-on-error=false',
      '--strict-readiness=false',
    ]);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  for (const d of SERVED) {
    it(`${d}: auto-completed config, binary round trip${d === 'FP16' ? '' : ' and JSON round trip'}`, async () => {
      const name = modelOf(d);
      const meta = (await request(`${s.url}/v2/models/${name}`)).json<{
        inputs: { datatype: string; shape: number[] }[];
      }>();
      assert.equal(meta.inputs[0].datatype, d);
      assert.deepEqual(meta.inputs[0].shape, [-1, -1]);

      const { raw, json } = sample(d, 6);
      const { body, headers } = binaryBody(
        {
          inputs: [
            { name: 'INPUT0', shape: [2, 3], datatype: d, parameters: { binary_data_size: raw.length } },
          ],
          parameters: { binary_data_output: true },
        },
        [raw],
      );
      const res = await request(`${s.url}/v2/models/${name}/infer`, { method: 'POST', body, headers });
      assert.equal(res.status, 200, res.body.toString());
      const { header, blobs } = splitBinaryResponse(res);
      assert.equal(header.outputs[0].datatype, d);
      assert.deepEqual(header.outputs[0].shape, [2, 3]);
      assert.ok(blobs.get('OUTPUT0')!.equals(raw), `${d} bytes differ`);

      if (d === 'FP16') {
        const r = await post(`${s.url}/v2/models/${name}/infer`, {
          inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: d, data: [1] }],
        });
        assert.equal(r.status, 400);
        return;
      }
      const jr = await post(`${s.url}/v2/models/${name}/infer`, {
        inputs: [{ name: 'INPUT0', shape: [2, 3], datatype: d, data: json }],
      });
      assert.equal(jr.status, 200, jr.body.toString());
      const out = jr.json<{ outputs: { data: unknown[]; datatype: string }[] }>().outputs[0];
      assert.equal(out.datatype, d);
      assert.deepEqual(out.data, json);
      if (d === 'BYTES') assert.equal(splitBytesElements(raw).length, 6);
    });
  }

  it('BF16: the model fails to load with a clear reason and everything else keeps serving', async () => {
    const index = (await post(`${s.url}/v2/repository/index`, {})).json<
      { name: string; state: string; reason: string }[]
    >();
    const bf16 = index.find((e) => e.name === 'identity_bf16');
    assert.equal(bf16?.state, 'UNAVAILABLE');
    assert.match(bf16?.reason ?? '', /bfloat16|BF16|data type/i);
    assert.equal((await request(`${s.url}/v2/health/live`)).status, 200);
    assert.equal((await request(`${s.url}/v2/models/identity_int32/ready`)).status, 200);
  });
});
