// Issue 23 item 7, over real sockets against a real server process: large JSON bodies are parsed off the
// event loop (health checks are answered while one is parsed), refused by --http-max-json-size with a
// clean 400 (before the body is read when its size is declared), bounded in flight by
// --http-json-worker-bytes (a clean 503 past it), and a nesting bomb is refused before it can take the
// memory. Binary-tensor bodies keep the --http-max-input-size limit. Timing is measured in
// bench/overload, not asserted here.
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { makeRepository, removeRepository } from './harness.js';
import { connect, requestHead, type Outcome, type RawConnection } from './raw-http.js';
import { spawnServer, type SpawnedServer } from './spawned-server.js';

const BIG = `name: "big"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;

/** An inference request for `big` with `n` FP32 numbers as JSON text (`shape` says `declared`). */
function jsonTensor(n: number, declared = n, token = '1.2345678'): Buffer {
  const head = Buffer.from(
    `{"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}],"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[${declared}],"data":[`,
  );
  const item = Buffer.from(token + ',');
  const tail = Buffer.from(token + ']}]}');
  const out = Buffer.allocUnsafe(head.length + (n - 1) * item.length + tail.length);
  head.copy(out, 0);
  for (let i = 0, at = head.length; i < n - 1; i++, at += item.length) item.copy(out, at);
  tail.copy(out, out.length - tail.length);
  return out;
}

function post(body: Buffer, extra: Record<string, string | number> = {}): Buffer[] {
  return [
    requestHead('POST', '/v2/models/big/infer', body.length, {
      'Content-Type': 'application/json',
      ...extra,
    }),
    body,
  ];
}

async function open(port: number): Promise<RawConnection> {
  const c = await connect(port, '127.0.0.1', 300_000);
  if (typeof c === 'string') assert.fail(`connect: ${c}`);
  return c;
}

function response(o: Outcome): Extract<Outcome, { kind: 'response' }> {
  assert.ok(o.kind === 'response', `no answer: ${JSON.stringify(o)}`);
  return o;
}

const errorOf = (o: Extract<Outcome, { kind: 'response' }>): string =>
  (JSON.parse(o.body.toString()) as { error: string }).error;

/** The FP32 values of `big`'s binary output. */
function output(o: Extract<Outcome, { kind: 'response' }>): Float32Array {
  const headerLength = Number(/\r\ninference-header-content-length:\s*(\d+)/i.exec(o.head)?.[1]);
  const data = o.body.subarray(headerLength);
  return new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length));
}

/** Health checks on new connections, one after the other, until stopped; counts the answers. */
function prober(port: number): {
  stop(): Promise<{ answered: number; failures: string[] }>;
  readonly answered: number;
} {
  let stopped = false;
  let answered = 0;
  const failures: string[] = [];
  const loop = (async () => {
    while (!stopped) {
      const c = await connect(port, '127.0.0.1', 120_000);
      if (typeof c === 'string') {
        failures.push(c);
        continue;
      }
      const o = await c.send(requestHead('GET', '/v2/health/ready', 0, { Connection: 'close' }));
      c.close();
      if (o.kind === 'response' && o.status === 200) answered++;
      else failures.push(JSON.stringify(o));
    }
  })();
  return {
    get answered() {
      return answered;
    },
    stop: async () => {
      stopped = true;
      await loop;
      return { answered, failures };
    },
  };
}

describe('large JSON bodies are parsed off the event loop', () => {
  let s: SpawnedServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({ big: { config: BIG } });
    s = await spawnServer([`--model-repository=${repo}`]);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('a large JSON tensor is decoded right', async () => {
    const n = 1_000_000; // 10 MB of JSON
    const c = await open(s.port);
    const o = response(await c.send(post(jsonTensor(n))));
    c.close();
    assert.equal(o.status, 200, o.body.subarray(0, 300).toString());
    const out = output(o);
    assert.equal(out.length, n);
    assert.equal(out[0], Math.fround(1.2345678));
    assert.equal(out[n - 1], Math.fround(1.2345678));
  });

  it('health checks on new connections are answered while a large body is parsed', async () => {
    // The shape declares one element more than `data` has: the 400 comes right after the parse, so the
    // health checks answered between the upload and that answer were answered during the parse.
    const n = 2_000_000; // 20 MB of JSON, seconds of parsing
    const c = await open(s.port);
    let during: ReturnType<typeof prober> | undefined;
    const answer = c.send(post(jsonTensor(n, n + 1)), () => (during = prober(s.port)));
    const o = response(await answer);
    const probes = await during!.stop();
    c.close();
    assert.equal(o.status, 400);
    assert.match(errorOf(o), /unexpected number of elements in 'data' for input 'INPUT0'/);
    assert.deepEqual(probes.failures, []);
    // Hundreds are answered while a worker parses; with the parse on the event loop, a handful at most
    // (those answered while the end of the body was still being read).
    assert.ok(
      probes.answered >= 20,
      `only ${probes.answered} health checks were answered while the body was parsed: the event loop was blocked`,
    );
  });
});

describe('JSON size limits', () => {
  let s: SpawnedServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({ big: { config: BIG } });
    s = await spawnServer([`--model-repository=${repo}`, '--http-max-json-size=1000000']);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('a JSON body over --http-max-json-size is refused with 400 from its declared size, and the connection closes', async () => {
    const body = jsonTensor(200_000); // 2 MB
    const c = await open(s.port);
    // Only the head and the first bytes are sent: the refusal must not wait for the rest.
    const o = response(
      await c.send([requestHead('POST', '/v2/models/big/infer', body.length), body.subarray(0, 1000)]),
    );
    assert.equal(o.status, 400);
    assert.ok(o.closes, 'a body that is not read must close the connection');
    assert.match(
      errorOf(o),
      /request JSON size of \d+ bytes exceeds the maximum allowed JSON size of 1000000 bytes.*--http-max-json-size/,
    );
    await c.whenClosed();
  });

  it('a JSON header declared over the limit in front of binary data is refused the same way', async () => {
    const c = await open(s.port);
    const o = response(
      await c.send([
        requestHead('POST', '/v2/models/big/infer', 3_000_000, {
          'Inference-Header-Content-Length': 2_000_000,
        }),
        Buffer.alloc(100, 0x20),
      ]),
    );
    assert.equal(o.status, 400);
    assert.ok(o.closes);
    assert.match(errorOf(o), /--http-max-json-size/);
    await c.whenClosed();
  });

  it('a compressed JSON body over the limit once inflated gets 400 and keeps the connection', async () => {
    const c = await open(s.port);
    const o = response(await c.send(post(gzipSync(jsonTensor(200_000)), { 'Content-Encoding': 'gzip' })));
    assert.equal(o.status, 400);
    assert.ok(!o.closes, 'the body was read: the connection stays');
    assert.match(errorOf(o), /--http-max-json-size/);
    const next = response(await c.send(post(jsonTensor(10))));
    assert.equal(next.status, 200);
    c.close();
  });

  it('JSON just under the limit is parsed (on a worker) and answered; binary tensors keep the input-size limit', async () => {
    const c = await open(s.port);
    const underLimit = response(await c.send(post(jsonTensor(95_000)))); // 950 kB
    assert.equal(underLimit.status, 200, underLimit.body.toString().slice(0, 300));
    assert.equal(output(underLimit).length, 95_000);

    // 4 MB of binary tensor data behind a small JSON header: only the JSON part is limited.
    const data = new Float32Array(1_000_000).map((_, i) => i);
    const header = Buffer.from(
      JSON.stringify({
        inputs: [
          {
            name: 'INPUT0',
            datatype: 'FP32',
            shape: [data.length],
            parameters: { binary_data_size: data.byteLength },
          },
        ],
        outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
      }),
    );
    const body = Buffer.concat([header, Buffer.from(data.buffer)]);
    const binary = response(
      await c.send([
        requestHead('POST', '/v2/models/big/infer', body.length, {
          'Inference-Header-Content-Length': header.length,
        }),
        body,
      ]),
    );
    assert.equal(binary.status, 200, binary.body.subarray(0, 300).toString());
    const out = output(binary);
    assert.equal(out.length, data.length);
    assert.equal(out[999_999], 999_999);
    c.close();
  });

  it('a nesting bomb is refused before it is parsed, and the server keeps serving', async () => {
    // 950 kB of `[0],` is 237,500 arrays: more heap than 16 × the 1 MB limit allows.
    const n = 237_000;
    const text = `{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[${n}],"data":[${'[0],'.repeat(n - 1)}[0]]}]}`;
    const c = await open(s.port);
    const o = response(await c.send(post(Buffer.from(text))));
    assert.equal(o.status, 400);
    assert.match(errorOf(o), /could need up to \d+ MB of memory to parse/);
    assert.ok(!o.closes);
    assert.equal(response(await c.send(post(jsonTensor(10)))).status, 200);
    c.close();
  });
});

describe('large JSON bodies in flight are bounded', () => {
  let s: SpawnedServer;
  let repo: string;
  before(async () => {
    repo = makeRepository({ big: { config: BIG } });
    s = await spawnServer([`--model-repository=${repo}`, '--http-json-worker-bytes=32000000']);
  });
  after(async () => {
    await s.stop();
    removeRepository(repo);
  });

  it('past --http-json-worker-bytes requests get a clean 503, the admitted ones their answers, and memory stays bounded', async () => {
    const n = 800_000; // 8 MB each: four fit in 32 MB
    const body = jsonTensor(n);
    const before = s.memoryMb();
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const c = await open(s.port);
        const o = await c.send(post(body));
        c.close();
        return o;
      }),
    );
    const after = s.memoryMb();
    const answered = outcomes.map(response);
    const ok = answered.filter((o) => o.status === 200);
    const refused = answered.filter((o) => o.status === 503);
    assert.equal(ok.length + refused.length, 10, answered.map((o) => o.status).join(','));
    assert.ok(ok.length >= 1 && ok.length <= 4, `${ok.length} admitted`);
    assert.ok(refused.length >= 6, `${refused.length} refused`);
    for (const o of ok) assert.equal(output(o).length, n);
    for (const o of refused) {
      assert.ok(o.closes, 'a refusal before the body is read closes the connection');
      assert.match(errorOf(o), /too many large JSON requests in progress/);
    }
    // Generous: the bodies alone are 80 MB; 16 of 66 MB at once once took the server to 2.7 GB.
    assert.ok(
      after.peak - before.rss < 1024,
      `peak RSS grew by ${Math.round(after.peak - before.rss)} MB for 10 bodies of 8 MB`,
    );
  });
});
