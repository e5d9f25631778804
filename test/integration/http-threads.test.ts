// --http-thread-count (src/frontends/http/threads): the same server answered with and without protocol
// threads, request for request — inference over JSON and binary tensors, a bad input, an unknown model,
// the other endpoints — and the statistics counting what the threads served. On a Node without
// net.Server.listen's `reusePort` (Node 20) the flag is refused with a warning and HTTP is served as before.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { threadsSupported } from '../../src/frontends/threads/pool.js';
import {
  binaryBody,
  makeRepository,
  post,
  removeRepository,
  request,
  splitBinaryResponse,
  startServer,
  type HttpResult,
  type TestServer,
} from './harness.js';

const IDENTITY = `name: "ident"
backend: "identity"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
`;

const JSON_REQUEST = {
  id: 'r1',
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3.5, -4] }],
};

/** What must match between the two servers: status, content type, body. */
function answer(r: HttpResult): { status: number; type: string | null; body: string } {
  return { status: r.status, type: r.headers.get('content-type'), body: r.body.toString('latin1') };
}

const supported = threadsSupported();

describe('--http-thread-count', { skip: !supported && 'needs reusePort (Node 22.12+)' }, () => {
  let repo: string;
  let plain: TestServer;
  let threaded: TestServer;
  before(async () => {
    repo = makeRepository({ ident: { config: IDENTITY } });
    plain = await startServer([`--model-repository=${repo}`]);
    // Verbose: the main thread's HTTP server logs each request it handles, so the test sees which it got.
    threaded = await startServer([`--model-repository=${repo}`, '--http-thread-count=2']);
    const verbose = await post(`${threaded.url}/v2/logging`, { log_verbose_level: 1 });
    assert.equal(verbose.status, 200, verbose.body.toString());
  });
  after(async () => {
    await threaded?.stop();
    await plain?.stop();
    removeRepository(repo);
  });

  it('starts its threads', () => {
    assert.ok(
      threaded.logs.some((l) => l.includes('HTTP protocol work on 2 threads')),
      threaded.logs.join('\n'),
    );
  });

  it('answers JSON inference as without threads', async () => {
    const a = await post(`${plain.url}/v2/models/ident/infer`, JSON_REQUEST);
    const b = await post(`${threaded.url}/v2/models/ident/infer`, JSON_REQUEST);
    assert.equal(b.status, 200, b.body.toString());
    assert.deepEqual(answer(b), answer(a));
    assert.deepEqual(b.json<{ outputs: { data: number[] }[] }>().outputs[0].data, [1, 2, 3.5, -4]);
    // Decoded and encoded on a protocol thread: the main thread's HTTP server never saw it.
    assert.ok(
      !threaded.logs.some((l) => l.includes('HTTP request: POST /v2/models/ident/infer')),
      "the inference request went through the main thread's HTTP server",
    );
    await request(`${threaded.url}/v2/models/ident/config`);
    assert.ok(
      threaded.logs.some((l) => l.includes('HTTP request: GET /v2/models/ident/config')),
      "a forwarded request did not reach the main thread's HTTP server",
    );
  });

  it('answers binary tensors in and out as without threads, also on a version path', async () => {
    const data = Buffer.from(new Float32Array([9, 8, 7, 6]).buffer);
    const { body, headers } = binaryBody(
      {
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4], parameters: { binary_data_size: 16 } }],
        outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
      },
      [data],
    );
    for (const path of ['/v2/models/ident/infer', '/v2/models/ident/versions/1/infer']) {
      const a = await request(`${plain.url}${path}`, { method: 'POST', body, headers });
      const b = await request(`${threaded.url}${path}`, { method: 'POST', body, headers });
      assert.equal(b.status, 200, b.body.toString());
      assert.deepEqual(answer(b), answer(a));
      assert.equal(
        b.headers.get('inference-header-content-length'),
        a.headers.get('inference-header-content-length'),
      );
      assert.deepEqual(splitBinaryResponse(b).blobs.get('OUTPUT0'), data);
    }
  });

  it('answers gzip requests and gzip answers as without threads', async () => {
    const { gzipSync, gunzipSync } = await import('node:zlib');
    const body = gzipSync(JSON.stringify(JSON_REQUEST));
    const headers = { 'Content-Encoding': 'gzip', 'Accept-Encoding': 'gzip' };
    const a = await fetch(`${plain.url}/v2/models/ident/infer`, { method: 'POST', body, headers });
    const b = await fetch(`${threaded.url}/v2/models/ident/infer`, { method: 'POST', body, headers });
    assert.equal(b.status, 200);
    assert.equal(b.headers.get('content-encoding'), a.headers.get('content-encoding'));
    // fetch undoes the content coding: the JSON is compared.
    assert.equal(await b.text(), await a.text());
    void gunzipSync;
  });

  it('refuses bad requests with the same status and text', async () => {
    const cases: [string, unknown][] = [
      [
        '/v2/models/ident/infer',
        { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 4], data: [1, 2, 3, 4] }] },
      ],
      [
        '/v2/models/ident/infer',
        { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }] },
      ],
      [
        '/v2/models/ident/infer',
        { inputs: [{ name: 'NOPE', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] },
      ],
      ['/v2/models/ident/infer', '{"inputs": ['],
      ['/v2/models/ident/infer', { inputs: 3 }],
      ['/v2/models/missing/infer', JSON_REQUEST],
      ['/v2/models/missing/infer', '{"inputs": ['],
      ['/v2/models/ident/versions/7/infer', JSON_REQUEST],
    ];
    for (const [path, body] of cases) {
      const a = await post(`${plain.url}${path}`, body);
      const b = await post(`${threaded.url}${path}`, body);
      assert.ok(a.status >= 400, `${path} ${JSON.stringify(body)}: ${a.status}`);
      assert.deepEqual(answer(b), answer(a), `${path} ${JSON.stringify(body)}`);
    }
  });

  it('answers the other endpoints as without threads', async () => {
    const gets = [
      '/v2',
      '/v2/health/live',
      '/v2/health/ready',
      '/v2/models/ident',
      '/v2/models/ident/ready',
      '/v2/models/ident/config',
      '/v2/models/missing',
      '/v2/no/such/path',
      '/v2/models/ident/infer',
    ];
    for (const path of gets) {
      const a = await request(`${plain.url}${path}`);
      const b = await request(`${threaded.url}${path}`);
      assert.deepEqual(answer(b), answer(a), path);
      assert.equal(b.headers.get('allow'), a.headers.get('allow'), path);
      assert.equal(b.headers.get('server'), a.headers.get('server'), path);
    }
    const a = await post(`${plain.url}/v2/repository/index`, {});
    const b = await post(`${threaded.url}/v2/repository/index`, {});
    assert.deepEqual(answer(b), answer(a));
  });

  it('counts what the threads served in the model statistics', async () => {
    type Stats = { model_stats: { inference_stats: { success: { count: number } } }[] };
    const count = async (): Promise<number> =>
      (await request(`${threaded.url}/v2/models/ident/stats`)).json<Stats>().model_stats[0].inference_stats
        .success.count;
    const before = await count();
    await Promise.all(
      Array.from({ length: 12 }, () => post(`${threaded.url}/v2/models/ident/infer`, JSON_REQUEST)),
    );
    assert.equal((await count()) - before, 12);
  });
});

describe(
  '--http-thread-count with settings that need the main thread',
  { skip: !supported && 'needs reusePort (Node 22.12+)' },
  () => {
    let repo: string;
    let plain: TestServer;
    let threaded: TestServer;
    const flags = (): string[] => [
      `--model-repository=${repo}`,
      '--http-restricted-api=inference:Infer-Key=k1',
    ];
    before(async () => {
      repo = makeRepository({ ident: { config: IDENTITY } });
      plain = await startServer(flags());
      threaded = await startServer([...flags(), '--http-thread-count=2']);
    });
    after(async () => {
      await threaded?.stop();
      await plain?.stop();
      removeRepository(repo);
    });

    it('refuses and admits inference by --http-restricted-api as without threads', async () => {
      for (const headers of [undefined, { 'Infer-Key': 'k1' }, { 'Infer-Key': 'wrong' }]) {
        const a = await post(`${plain.url}/v2/models/ident/infer`, JSON_REQUEST, headers);
        const b = await post(`${threaded.url}/v2/models/ident/infer`, JSON_REQUEST, headers);
        assert.deepEqual(answer(b), answer(a), JSON.stringify(headers));
      }
    });
  },
);

describe(
  '--http-thread-count and --http-max-connections',
  { skip: !supported && 'needs reusePort (Node 22.12+)' },
  () => {
    it('holds the cap for the whole port: each thread takes its share', async () => {
      const repo = makeRepository({ ident: { config: IDENTITY } });
      const s = await startServer([
        `--model-repository=${repo}`,
        '--http-thread-count=2',
        '--http-max-connections=2',
      ]);
      const port = Number(new URL(s.url).port);
      const sockets: net.Socket[] = [];
      try {
        // Each newcomer at a thread's share (1) closes that thread's least active connection, or is refused.
        for (let i = 0; i < 8; i++) {
          const c = net.connect(port, '127.0.0.1');
          c.on('error', () => {});
          await new Promise<void>((resolve) => c.once('connect', () => resolve()));
          sockets.push(c);
          await new Promise((r) => setTimeout(r, 50));
        }
        await new Promise((r) => setTimeout(r, 500));
        const open = sockets.filter((c) => !c.destroyed && !c.readableEnded);
        assert.ok(open.length >= 1 && open.length <= 2, `${open.length} connections open past a cap of 2`);
      } finally {
        for (const c of sockets) c.destroy();
        await s.stop();
        removeRepository(repo);
      }
    });
  },
);

describe('--http-thread-count without reusePort', { skip: supported && 'this Node has reusePort' }, () => {
  it('warns and serves HTTP on the main thread', async () => {
    const repo = makeRepository({ ident: { config: IDENTITY } });
    const s = await startServer([`--model-repository=${repo}`, '--http-thread-count=2']);
    try {
      assert.ok(
        s.logs.some((l) => l.includes('--http-thread-count needs Node 22.12+')),
        s.logs.join('\n'),
      );
      const r = await post(`${s.url}/v2/models/ident/infer`, JSON_REQUEST);
      assert.equal(r.status, 200, r.body.toString());
    } finally {
      await s.stop();
      removeRepository(repo);
    }
  });
});
