// Multiplexing by header (docs/model-repository.md, "Variants by header"): `nereid-model-variant: <v>` on a
// request for model <m> is served by the repository's model <m>.<v>, over HTTP (infer, metadata, ready) and
// gRPC (ModelInfer, a ModelStreamInfer stream); in on-demand mode the variant is loaded by that request.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GrpcClient, InferInput } from '../../src/client/index.js';
import { makeRepository, post, removeRepository, request, startServer, type TestServer } from './harness.js';

/** An identity model that answers with its own name in OUTPUT0's first element's place: NAME. */
const config = (name: string): string => `
name: "${name}"
backend: "javascript"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;
const MODEL = `export default class Identity {
  execute(requests) {
    return requests.map((r) => ({ outputs: [r.input('INPUT0').withName('OUTPUT0')] }));
  }
}
`;
const body = { inputs: [{ name: 'INPUT0', shape: [2], datatype: 'FP32', data: [1, 2] }] };
const H = 'nereid-model-variant';

describe('routing by the nereid-model-variant header', () => {
  let s: TestServer;
  let repo: string;
  before(async () => {
    const models = Object.fromEntries(
      ['echo', 'echo.acme', 'echo.globex'].map((n) => [
        n,
        { config: config(n), files: { '1/model.mjs': MODEL } },
      ]),
    );
    repo = makeRepository(models);
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=on-demand',
      '--log-verbose=0',
    ]);
  });
  after(async () => {
    await s?.stop();
    if (repo !== undefined) removeRepository(repo);
  });

  it('HTTP: the header picks <model>.<variant>, which loads on demand; without it the model itself', async () => {
    assert.equal(s.running.server.isModelReady('echo.acme'), false);
    const r = await post(`${s.url}/v2/models/echo/infer`, body, { [H]: 'acme' });
    assert.equal(r.status, 200, r.body.toString());
    assert.equal(r.json<{ model_name: string }>().model_name, 'echo.acme');
    assert.equal(s.running.server.isModelReady('echo.acme'), true);
    assert.equal(s.running.server.isModelReady('echo.globex'), false);
    const plain = await post(`${s.url}/v2/models/echo/infer`, body);
    assert.equal(plain.json<{ model_name: string }>().model_name, 'echo');
    // Metadata and readiness follow the header too.
    const meta = await request(`${s.url}/v2/models/echo`, { headers: { [H]: 'acme' } });
    assert.equal(meta.json<{ name: string }>().name, 'echo.acme');
    assert.equal((await request(`${s.url}/v2/models/echo/ready`, { headers: { [H]: 'acme' } })).status, 200);
    assert.equal(
      (await request(`${s.url}/v2/models/echo/ready`, { headers: { [H]: 'globex' } })).status,
      400,
    );
  });

  it('HTTP: an unknown variant is 404 as any unknown model, a malformed one 400', async () => {
    const unknown = await post(`${s.url}/v2/models/echo/infer`, body, { [H]: 'initech' });
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.toString(), /echo\.initech/);
    for (const bad of ['../x', 'a b', '.hidden', 'x'.repeat(129)]) {
      const r = await post(`${s.url}/v2/models/echo/infer`, body, { [H]: bad });
      assert.equal(r.status, 400, bad);
      assert.match(r.body.toString(), /nereid-model-variant/);
    }
  });

  it('gRPC: ModelInfer and every request of a ModelStreamInfer stream follow the metadata', async () => {
    const grpc = new GrpcClient(`127.0.0.1:${s.running.grpc!.port}`, { headers: { [H]: 'globex' } });
    const input = (): InferInput[] => [new InferInput('INPUT0', [2], 'FP32').setData(Float32Array.of(3, 4))];
    try {
      const unary = await grpc.infer('echo', input());
      assert.equal(unary.modelName, 'echo.globex');
      assert.deepEqual([...unary.asArray('OUTPUT0', 'FP32')], [3, 4]);
      const stream = grpc.streamInfer();
      stream.send({ model: 'echo', inputs: input() });
      stream.send({ model: 'echo', inputs: input() });
      stream.end();
      const names: string[] = [];
      for await (const r of stream.results()) names.push(r.modelName);
      assert.deepEqual(names, ['echo.globex', 'echo.globex']);
    } finally {
      grpc.close();
    }
  });
});
