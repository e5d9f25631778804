// --grpc-infer-thread-count (src/frontends/grpc/threads): the same server answered with and without gRPC
// protocol threads, call for call — ModelInfer with raw_input_contents and typed contents, bad requests
// (status and message), the other rpcs, a ModelStreamInfer — the statistics and request counts covering
// what the threads served, and the main thread's gRPC server never seeing a ModelInfer. On a Node without
// net.Server.listen's `reusePort` (Node 20) the flag is refused with a warning and gRPC is served as before.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import type { ServiceError } from '@grpc/grpc-js';
import { threadsSupported } from '../../src/frontends/threads/pool.js';
import type { Plain } from '../../src/frontends/grpc/messages.js';
import { TestClient, encodeMessage } from '../../src/frontends/grpc/test-client.testkit.js';
import { makeRepository, post, removeRepository, request, startServer, type TestServer } from './harness.js';

const IDENTITY = `name: "ident"
backend: "identity"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
`;

const fp32 = (v: number[]): Buffer => Buffer.from(new Float32Array(v).buffer);

const RAW_REQUEST = {
  model_name: 'ident',
  id: 'r1',
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4] }],
  raw_input_contents: [fp32([1, 2, 3.5, -4])],
};

const TYPED_REQUEST = {
  model_name: 'ident',
  id: 'r2',
  inputs: [
    { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [9, 8, 7.25, -6] } },
  ],
};

const MODEL_INFER_LINE = 'GRPC request: /inference.GRPCInferenceService/ModelInfer';

/** A call's outcome, whichever it is: the response or the status and message. */
async function outcome(p: Promise<Plain | Buffer>): Promise<unknown> {
  try {
    const v = await p;
    return { ok: Buffer.isBuffer(v) ? v.toString('hex') : v };
  } catch (err) {
    const e = err as ServiceError;
    return { code: e.code, details: e.details };
  }
}

const supported = threadsSupported();

describe('--grpc-infer-thread-count', { skip: !supported && 'needs reusePort (Node 22.12+)' }, () => {
  let repo: string;
  let plain: TestServer;
  let threaded: TestServer;
  let a: TestClient;
  let b: TestClient;
  before(async () => {
    repo = makeRepository({ ident: { config: IDENTITY } });
    plain = await startServer([`--model-repository=${repo}`]);
    // Verbose: each gRPC server logs the calls it handles, so the test sees which one got a call.
    threaded = await startServer([`--model-repository=${repo}`, '--grpc-infer-thread-count=2']);
    const verbose = await post(`${threaded.url}/v2/logging`, { log_verbose_level: 1 });
    assert.equal(verbose.status, 200, verbose.body.toString());
    // The threads' loggers follow the logging API's settings within a fraction of a second.
    await new Promise((r) => setTimeout(r, 600));
    a = new TestClient(`127.0.0.1:${plain.running.grpc!.port}`);
    b = new TestClient(`127.0.0.1:${threaded.running.grpc!.port}`);
  });
  after(async () => {
    a?.close();
    b?.close();
    await threaded?.stop();
    await plain?.stop();
    removeRepository(repo);
  });

  it('starts its threads', () => {
    assert.ok(
      threaded.logs.some((l) => l.includes('gRPC protocol work on 2 threads')),
      threaded.logs.join('\n'),
    );
  });

  it('answers ModelInfer with raw and typed contents as without threads, on a thread', async () => {
    for (const req of [RAW_REQUEST, TYPED_REQUEST, { ...RAW_REQUEST, model_version: '1' }]) {
      const x = await a.call('ModelInfer', req);
      const y = await b.call('ModelInfer', req);
      assert.deepEqual(y, x);
      assert.equal(y.model_name, 'ident');
    }
    const y = await b.call('ModelInfer', RAW_REQUEST);
    assert.deepEqual((y.raw_output_contents as Buffer[])[0], fp32([1, 2, 3.5, -4]));
    const typed = await b.call('ModelInfer', TYPED_REQUEST);
    assert.deepEqual((typed.raw_output_contents as Buffer[])[0], fp32([9, 8, 7.25, -6]));
    // Decoded and encoded on a protocol thread: the main thread's gRPC server never saw a ModelInfer.
    assert.ok(
      !threaded.logs.some((l) => l.includes(MODEL_INFER_LINE)),
      "a ModelInfer went through the main thread's gRPC server",
    );
    assert.ok(
      threaded.logs.some((l) =>
        /GRPC request on protocol thread \d: \/inference.GRPCInferenceService\/ModelInfer/.test(l),
      ),
      threaded.logs.join('\n'),
    );
  });

  it('refuses bad requests with the same status and message', async () => {
    const cases: object[] = [
      { ...RAW_REQUEST, model_name: 'missing' },
      // An unknown model is reported before the bad datatype, as without threads.
      { ...RAW_REQUEST, model_name: 'missing', inputs: [{ name: 'INPUT0', datatype: 'FOO', shape: [1, 4] }] },
      { ...RAW_REQUEST, inputs: [{ name: 'INPUT0', datatype: 'FOO', shape: [1, 4] }] },
      { ...RAW_REQUEST, inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 4] }] },
      { ...RAW_REQUEST, inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 3] }] },
      { ...RAW_REQUEST, inputs: [{ name: 'NOPE', datatype: 'FP32', shape: [1, 4] }] },
      { ...RAW_REQUEST, raw_input_contents: [] },
      { ...TYPED_REQUEST, raw_input_contents: [fp32([1, 2, 3, 4])] },
      { ...RAW_REQUEST, model_version: '7' },
    ];
    for (const req of cases) {
      const x = await outcome(a.call('ModelInfer', req));
      const y = await outcome(b.call('ModelInfer', req));
      assert.ok((x as { code?: number }).code !== undefined, `${JSON.stringify(req)} succeeded`);
      assert.deepEqual(y, x, JSON.stringify(req));
    }
    // Bytes that are no ModelInferRequest at all.
    const path = '/inference.GRPCInferenceService/ModelInfer';
    const junk = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    const x = await outcome(a.raw(path, junk));
    assert.equal((x as { code: number }).code, 3, JSON.stringify(x));
    assert.deepEqual(await outcome(b.raw(path, junk)), x);
    assert.ok(!threaded.logs.some((l) => l.includes(MODEL_INFER_LINE)));
  });

  it('answers the other rpcs as without threads, through the main thread', async () => {
    const calls: [string, object][] = [
      ['ServerLive', {}],
      ['ServerReady', {}],
      ['ServerMetadata', {}],
      ['ModelReady', { name: 'ident' }],
      ['ModelMetadata', { name: 'ident' }],
      ['ModelMetadata', { name: 'missing' }],
      ['ModelConfig', { name: 'ident' }],
      ['RepositoryIndex', {}],
    ];
    for (const [rpc, req] of calls) {
      assert.deepEqual(await outcome(b.call(rpc, req)), await outcome(a.call(rpc, req)), rpc);
    }
    const unknown = '/inference.GRPCInferenceService/NoSuchRpc';
    const none = encodeMessage('inference.ServerLiveRequest', {});
    assert.deepEqual(await outcome(b.raw(unknown, none)), await outcome(a.raw(unknown, none)));
    assert.ok(
      threaded.logs.some((l) => l.includes('GRPC request: /inference.GRPCInferenceService/ModelMetadata')),
      "a forwarded call did not reach the main thread's gRPC server",
    );
  });

  it('serves ModelStreamInfer as without threads', async () => {
    const run = async (c: TestClient): Promise<Plain[]> => {
      const stream = c.stream();
      const got: Plain[] = [];
      const done = new Promise<void>((resolve, reject) => {
        stream.on('data', (m: Plain) => {
          got.push(m);
          if (got.length === 3) stream.end();
        });
        stream.on('end', resolve);
        stream.on('error', reject);
      });
      stream.write(RAW_REQUEST);
      stream.write({ ...RAW_REQUEST, model_name: 'missing' });
      stream.write(TYPED_REQUEST);
      await done;
      return got;
    };
    const x = await run(a);
    const y = await run(b);
    assert.equal(y.length, 3);
    assert.deepEqual(y, x);
    assert.match(String(y[1].error_message), /missing/);
    assert.ok(
      threaded.logs.some((l) => l.includes('GRPC request: /inference.GRPCInferenceService/ModelStreamInfer')),
    );
  });

  it('counts what the threads served in the statistics and the request metrics', async () => {
    const count = async (): Promise<number> =>
      Number(
        ((await b.call('ModelStatistics', { name: 'ident' })).model_stats as Plain[])[0].inference_count,
      );
    const before = await count();
    await Promise.all(Array.from({ length: 12 }, () => b.call('ModelInfer', RAW_REQUEST)));
    assert.equal((await count()) - before, 12);
    // The threads send their counts every 100 ms.
    await new Promise((r) => setTimeout(r, 300));
    const metrics = await request(`http://127.0.0.1:${threaded.running.metrics!.port}/metrics`);
    const line = metrics.body
      .toString()
      .split('\n')
      .find(
        (l) => l.startsWith('nereid_grpc_requests_total') && l.includes('ModelInfer"') && l.includes('OK'),
      );
    assert.ok(line !== undefined, metrics.body.toString());
    assert.ok(Number(line.split(' ').pop()) >= 15, line);
  });
});

describe(
  '--grpc-infer-thread-count and --grpc-max-connections',
  { skip: !supported && 'needs reusePort (Node 22.12+)' },
  () => {
    it('holds the cap for the whole port: each thread takes its share', async () => {
      const repo = makeRepository({ ident: { config: IDENTITY } });
      const s = await startServer([
        `--model-repository=${repo}`,
        '--grpc-infer-thread-count=2',
        '--grpc-max-connections=2',
      ]);
      const sessions: http2.ClientHttp2Session[] = [];
      try {
        // Each newcomer at a thread's share (1) closes that thread's least active connection, or is refused.
        for (let i = 0; i < 8; i++) {
          const c = http2.connect(`http://127.0.0.1:${s.running.grpc!.port}`);
          c.on('error', () => {});
          await new Promise<void>((resolve) => {
            c.once('remoteSettings', () => resolve());
            c.once('close', () => resolve());
          });
          sessions.push(c);
        }
        await new Promise((r) => setTimeout(r, 500));
        const open = sessions.filter((c) => !c.closed && !c.destroyed);
        assert.ok(open.length >= 1 && open.length <= 2, `${open.length} connections open past a cap of 2`);
      } finally {
        for (const c of sessions) c.destroy();
        await s.stop();
        removeRepository(repo);
      }
    });
  },
);

describe(
  '--grpc-infer-thread-count without reusePort',
  { skip: supported && 'this Node has reusePort' },
  () => {
    it('warns and serves gRPC on the main thread', async () => {
      const repo = makeRepository({ ident: { config: IDENTITY } });
      const s = await startServer([`--model-repository=${repo}`, '--grpc-infer-thread-count=2']);
      const c = new TestClient(`127.0.0.1:${s.running.grpc!.port}`);
      try {
        assert.ok(
          s.logs.some((l) => l.includes('--grpc-infer-thread-count needs Node 22.12+')),
          s.logs.join('\n'),
        );
        const r = await c.call('ModelInfer', RAW_REQUEST);
        assert.deepEqual((r.raw_output_contents as Buffer[])[0], fp32([1, 2, 3.5, -4]));
      } finally {
        c.close();
        await s.stop();
        removeRepository(repo);
      }
    });
  },
);
