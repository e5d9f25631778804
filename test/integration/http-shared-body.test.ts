/**
 * Large HTTP request bodies are read into shared memory, so a JavaScript model's worker sees the request's
 * tensors without a copy. A probe model reports, per request, whether its input's bytes live in a
 * SharedArrayBuffer and the sum of the values it saw (so the bytes are also the right ones).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeRepository, removeRepository, request, startServer, type TestServer } from './harness.js';

const PROBE = `
import { Tensor } from 'nereid-server';
export default class SharedProbe {
  execute(requests) {
    return requests.map((r) => {
      const input = r.input('INPUT0');
      const shared = input.data.buffer instanceof SharedArrayBuffer ? 1 : 0;
      // A plain view: throws if the tensor's bytes were not aligned in the body.
      const values = new Float64Array(input.data.buffer, input.data.byteOffset, input.data.byteLength / 8);
      let sum = 0;
      for (const v of values) sum += v;
      return { outputs: [Tensor.from('SHARED', new Int32Array([shared])), Tensor.from('SUM', new Float64Array([sum]))] };
    });
  }
}
`;

const CONFIG = `
name: "shared_probe"
backend: "javascript"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP64 dims: [ -1 ] } ]
output [ { name: "SHARED" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "SUM" data_type: TYPE_FP64 dims: [ 1 ] } ]
`;

/** A binary-extension request; `headerPad` spaces after the JSON header move the tensor's offset. */
function binaryRequest(
  values: Float64Array,
  headerPad: number,
): { body: Buffer; headers: Record<string, string> } {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        {
          name: 'INPUT0',
          datatype: 'FP64',
          shape: [values.length],
          parameters: { binary_data_size: values.byteLength },
        },
      ],
      outputs: [{ name: 'SHARED' }, { name: 'SUM' }],
    }) + ' '.repeat(headerPad),
  );
  const data = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  return {
    body: Buffer.concat([header, data]),
    headers: {
      'Content-Type': 'application/octet-stream',
      'Inference-Header-Content-Length': String(header.length),
    },
  };
}

void describe('large HTTP bodies reach a JavaScript model in shared memory', () => {
  let repo: string;
  let server: TestServer;
  before(async () => {
    repo = makeRepository({ shared_probe: { config: CONFIG, files: { '1/model.js': PROBE } } });
    server = await startServer([`--model-repository=${repo}`]);
  });
  after(async () => {
    await server.stop();
    removeRepository(repo);
  });

  async function probe(n: number, headerPad = 0): Promise<{ shared: number; sum: number }> {
    const values = new Float64Array(n).map((_, i) => (i % 7) - 3);
    const expected = values.reduce((a, b) => a + b, 0);
    const { body, headers } = binaryRequest(values, headerPad);
    const res = await request(`${server.url}/v2/models/shared_probe/infer`, { body, headers });
    assert.equal(res.status, 200, res.body.toString());
    const doc = res.json<{ outputs: { name: string; data: number[] }[] }>();
    const out = (name: string): number => doc.outputs.find((o) => o.name === name)!.data[0];
    assert.equal(out('SUM'), expected, 'the model saw the bytes the client sent');
    return { shared: out('SHARED'), sum: out('SUM') };
  }

  void it('a 1 MiB tensor is shared with the worker, not copied, and aligned whatever the header length', async () => {
    for (let pad = 0; pad < 8; pad++) assert.equal((await probe(131072, pad)).shared, 1, `header pad ${pad}`);
  });

  void it('a small tensor is copied (no shared memory for a few bytes)', async () => {
    assert.equal((await probe(16)).shared, 0);
  });
});
