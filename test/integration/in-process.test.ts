// The in-process API (`import { Nereid } from 'nereid-server'`): a whole server in this process with no socket,
// typed infer() and inferStream(), model control, errors as NereidErrors, frontends attached later and
// detached, shared-memory tensors reaching a JavaScript model without a copy.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync } from 'node:fs';
import { promisify } from 'node:util';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Nereid, NereidError, Tensor, type NereidServer } from '../../src/index.js';
import { EXAMPLES, ROOT, makeRepository, removeRepository } from './harness.js';

const FIXTURES = path.join(ROOT, 'test/fixtures/javascript');

/** TCP servers and connections this process holds (Node's active resources). */
const sockets = (): string[] => process.getActiveResourcesInfo().filter((r) => r.startsWith('TCP'));

describe('in-process API', () => {
  let repo: string;
  let server: NereidServer;
  const logs: string[] = [];

  before(async () => {
    repo = makeRepository({});
    for (const m of ['simple', 'stream_ts'])
      cpSync(path.join(EXAMPLES, m), path.join(repo, m), { recursive: true });
    for (const m of ['identity_js', 'lifecycle_ts']) {
      cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
    }
    server = await Nereid.start({
      modelRepository: repo,
      modelControlMode: 'explicit',
      loadModels: ['simple', 'stream_ts', 'identity_js'],
      log: (line) => logs.push(line),
    });
  });
  after(async () => {
    await server?.close();
    removeRepository(repo);
  });

  it('starts without opening a socket and serves models in-process', async () => {
    assert.deepEqual(sockets(), []);
    assert.equal(server.http, undefined);
    assert.equal(server.grpc, undefined);
    assert.equal(server.metrics, undefined);
    assert.equal(server.isReady(), true);
    const r = await server.infer({
      model: 'simple',
      inputs: [
        Tensor.from('INPUT0', new Int32Array(16).fill(5), { shape: [1, 16] }),
        Tensor.from('INPUT1', new Int32Array(16).fill(2), { shape: [1, 16] }),
      ],
    });
    assert.equal(r.modelName, 'simple');
    assert.equal(r.modelVersion, '1');
    assert.equal(r.final, true);
    assert.deepEqual([...r.output('OUTPUT0')!.int32()], new Array<number>(16).fill(7));
    assert.deepEqual([...r.output('OUTPUT1')!.int32()], new Array<number>(16).fill(3));
    assert.deepEqual(sockets(), []);
  });

  it('takes plain arrays by input name, with datatype and shape from the model metadata', async () => {
    const a = Array.from({ length: 16 }, (_, i) => i);
    const r = await server.infer({ model: 'simple', inputs: { INPUT0: a, INPUT1: a }, outputs: ['OUTPUT0'] });
    assert.deepEqual(
      r.outputs.map((o) => [o.name, o.datatype, o.shape]),
      [['OUTPUT0', 'INT32', [1, 16]]],
    );
    assert.deepEqual(
      r.output('OUTPUT0')!.toArray(),
      a.map((v) => 2 * v),
    );
    const js = await server.infer({ model: 'identity_js', inputs: { INPUT0: [0.5, 1.5, 2.5] } });
    assert.deepEqual(js.output('OUTPUT0')!.shape, [1, 3]);
    assert.deepEqual([...js.output('OUTPUT0')!.float32()], [0.5, 1.5, 2.5]);
  });

  it('shapes bare values as docs/embedding.md says: a lone -1 (the batch) takes the rest, of two the outer is 1', async () => {
    // simple: [-1, 16]. 32 values are a batch of 2, not a refusal or a batch of 1.
    const v = new Int32Array(32).fill(3);
    const two = await server.infer({ model: 'simple', inputs: { INPUT0: v, INPUT1: v } });
    assert.deepEqual(two.requireOutput('OUTPUT0').shape, [2, 16]);
    // identity_js: [-1, -1] (batching, variable length): the batch dimension is 1, the inner -1 takes 4.
    const one = await server.infer({ model: 'identity_js', inputs: { INPUT0: [1, 2, 3, 4] } });
    assert.deepEqual(one.requireOutput('OUTPUT0').shape, [1, 4]);
    // The fixed dims must divide the count.
    await assert.rejects(
      server.infer({ model: 'simple', inputs: { INPUT0: new Int32Array(20), INPUT1: v } }),
      {
        code: 'INVALID_ARG',
        message: "the values of input 'INPUT0' (20 values for [-1,16]) do not fill its shape: pass a Tensor",
      },
    );
  });

  it('inferStream() iterates a decoupled model’s responses as they come', async () => {
    const tokens: string[] = [];
    const finals: boolean[] = [];
    for await (const r of server.inferStream({
      model: 'stream_ts',
      inputs: { PROMPT: ['to be streamed'] },
    })) {
      if (r.outputs.length > 0) tokens.push(r.output('TOKEN')!.strings()[0]);
      finals.push(r.final);
    }
    assert.deepEqual(tokens, ['to', 'be', 'streamed']);
    assert.deepEqual(finals, [false, false, false, true]);
  });

  it('fails with NereidErrors carrying Triton’s codes', async () => {
    await assert.rejects(server.infer({ model: 'no_such_model', inputs: [] }), (e: unknown) => {
      assert.ok(e instanceof NereidError);
      assert.equal(e.code, 'NOT_FOUND');
      return true;
    });
    await assert.rejects(server.infer({ model: 'stream_ts', inputs: { PROMPT: ['x'] } }), {
      code: 'UNSUPPORTED',
      message: /decoupled/,
    });
    await assert.rejects(
      server.infer({ model: 'simple', inputs: { INPUT0: [1, 2, 3], INPUT1: [1, 2, 3] } }),
      {
        code: 'INVALID_ARG',
      },
    );
  });

  it('loads and unloads models (explicit mode), with a config given in code', async () => {
    assert.equal(server.isModelReady('lifecycle_ts'), false);
    await server.load('lifecycle_ts');
    assert.equal(server.isModelReady('lifecycle_ts'), true);
    const r = await server.infer({ model: 'lifecycle_ts', inputs: { IN: [4, 5] } });
    assert.deepEqual([...r.output('OUT')!.int32()], [8, 10]);
    await server.unload('lifecycle_ts');
    assert.equal(server.isModelReady('lifecycle_ts'), false);
    await assert.rejects(server.infer({ model: 'lifecycle_ts', inputs: { IN: [1] } }));

    await server.load('identity_js', {
      config: {
        name: 'identity_js',
        backend: 'javascript',
        max_batch_size: 0,
        input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
        output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      },
    });
    const flat = await server.infer({ model: 'identity_js', inputs: { INPUT0: [1, 2] } });
    assert.deepEqual(flat.output('OUTPUT0')!.shape, [2], 'the new config has no batch dimension');
  });

  it('a tensor in shared memory reaches a JavaScript model and comes back without a copy', async () => {
    const input = Tensor.allocShared('INPUT0', 'FP32', [4]);
    input.float32().set([1, 2, 3, 4]);
    const r = await server.infer({ model: 'identity_js', inputs: [input] });
    const out = r.output('OUTPUT0')!;
    assert.ok(out.data.buffer instanceof SharedArrayBuffer);
    input.float32()[3] = 99;
    assert.equal(out.float32()[3], 99, 'the output is the same memory as the input');
  });

  it('attaches an HTTP frontend on demand, and detaches it', async () => {
    const http = await server.listenHttp({ port: 0 });
    assert.equal(server.http?.port, http.port);
    assert.ok(sockets().includes('TCPServerWrap'), 'now there is a listening socket');
    const url = `http://127.0.0.1:${http.port}`;
    assert.equal((await fetch(`${url}/v2/health/ready`)).status, 200);
    const res = await fetch(`${url}/v2/models/identity_js/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [3, 4] }] }),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(((await res.json()) as { outputs: { data: number[] }[] }).outputs[0].data, [3, 4]);
    await assert.rejects(server.listenHttp(), { code: 'UNSUPPORTED' });
    await server.stopListening('http');
    assert.equal(server.http, undefined);
    await assert.rejects(fetch(`${url}/v2/health/ready`));
  });

  it('close() is idempotent and unloads every model', async () => {
    const other = await Nereid.start({
      modelRepository: repo,
      modelControlMode: 'explicit',
      loadModels: ['simple'],
      log: false,
    });
    await Promise.all([other.close(), other.close()]);
    assert.equal(other.isReady(), false);
    assert.deepEqual(other.repositoryIndex(true), []);
  });

  it('the documented example (examples/embedding/embed.js) runs and gets the right answers', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [path.join(ROOT, 'examples/embedding/embed.js')],
      {
        cwd: ROOT,
        timeout: 120_000,
      },
    );
    assert.match(stdout, /simple OUTPUT0: 10 11 12 .* 25\n/);
    assert.match(stdout, /"I love this great movie" -> positive/);
    assert.match(stdout, /"a boring and terrible film" -> negative/);
    assert.match(stdout, /stream_ts tokens: streamed \| word \| by \| word/);
    assert.match(stdout, /HTTP on port \d+: 200 \[0,2\]/);
  });
});
