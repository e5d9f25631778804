// Generator streaming end to end: a decoupled TypeScript model written as `async *execute(request)` (and a
// plain JavaScript `*execute`) on one embedded server, reached in-process (inferStream), over gRPC
// ModelStreamInfer, HTTP generate_stream and the HTTP client's generateStream. Each route shows the
// responses in order with the final flag last, an exception mid-stream ending the request with its error
// after the responses made before it, and a cancellation (break, AbortSignal, gRPC cancel, closed
// connection) stopping the generator so its finally block runs.
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Nereid, type NereidServer } from '../../src/index.js';
import { GrpcClient, HttpClient, InferInput, NereidClientError } from '../../src/client/index.js';
import { ROOT, makeRepository, removeRepository, waitFor } from './harness.js';
import { collect, postSse } from './sse.js';

const FIXTURES = path.join(ROOT, 'test/fixtures/javascript');

describe('generator streaming (async *execute)', () => {
  let repo: string;
  let server: NereidServer;
  let url: string;
  let nextId = 0;
  const id = (what: string): string => `${what}-${++nextId}`;
  /** What the generator of request `rid` wrote in its finally block (undefined: it has not run). */
  const finallyOf = (rid: string): number | undefined => {
    const file = path.join(repo, 'generator_ts', `finally-${rid}`);
    return existsSync(file) ? Number(readFileSync(file, 'utf8')) : undefined;
  };
  const outs = (
    values: { output(n: string): { int32(): Int32Array } | undefined; outputs: readonly unknown[] }[],
  ) => values.map((r) => (r.outputs.length > 0 ? r.output('OUT')!.int32()[0] : null));

  before(async () => {
    repo = makeRepository({});
    for (const m of ['generator_ts', 'generator_sync_js']) {
      cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
    }
    server = await Nereid.start({ modelRepository: repo, http: { port: 0 }, grpc: { port: 0 }, log: false });
    url = `http://127.0.0.1:${server.http!.port}`;
  });
  after(async () => {
    await server?.close();
    removeRepository(repo);
  });

  describe('in-process', () => {
    it('each yield is one response, in order; the final flag follows the return', async () => {
      const got = [];
      for await (const r of server.inferStream({ model: 'generator_ts', inputs: { COUNT: [4] } }))
        got.push(r);
      assert.deepEqual(outs(got), [0, 1, 2, 3, null]);
      assert.deepEqual(
        got.map((r) => r.final),
        [false, false, false, false, true],
      );
    });

    it('a sync *execute works too, and its return value is the last response, sent with the final flag', async () => {
      const got = [];
      for await (const r of server.inferStream({ model: 'generator_sync_js', inputs: { COUNT: [3] } })) {
        got.push(r);
      }
      assert.deepEqual(outs(got), [0, 1, 2, -1]);
      assert.deepEqual(
        got.map((r) => r.final),
        [false, false, false, true],
      );
    });

    it('a generator that yields nothing ends with the final flag alone', async () => {
      const got = [];
      for await (const r of server.inferStream({ model: 'generator_ts', inputs: { COUNT: [0] } }))
        got.push(r);
      assert.deepEqual(outs(got), [null]);
      assert.equal(got[0].final, true);
    });

    it('an exception mid-stream ends the request with its error after the responses made before it', async () => {
      const rid = id('fail');
      const got: (number | null)[] = [];
      await assert.rejects(
        (async () => {
          for await (const r of server.inferStream({
            model: 'generator_ts',
            id: rid,
            inputs: { COUNT: [5], FAIL_AT: [2] },
          })) {
            got.push(...outs([r]));
          }
        })(),
        { code: 'INTERNAL', message: /generator failed at 2/ },
      );
      assert.deepEqual(got, [0, 1]);
      assert.equal(finallyOf(rid), 2);
      // A NereidError thrown before the first yield keeps its code.
      await assert.rejects(
        (async () => {
          for await (const _ of server.inferStream({ model: 'generator_ts', inputs: { COUNT: [5000] } }));
        })(),
        { code: 'INVALID_ARG', message: /COUNT must be at most 1000/ },
      );
    });

    it('leaving the loop early cancels the request and runs the generator’s finally', async () => {
      const rid = id('break');
      const got: (number | null)[] = [];
      for await (const r of server.inferStream({
        model: 'generator_ts',
        id: rid,
        inputs: { COUNT: [1000], DELAY_MS: [20] },
      })) {
        got.push(...outs([r]));
        if (got.length === 2) break;
      }
      assert.deepEqual(got, [0, 1]);
      await waitFor(() => finallyOf(rid) !== undefined);
      const sent = finallyOf(rid)!;
      assert.ok(sent >= 2 && sent < 1000, `the generator stopped after ${sent} responses`);
      // The instance is free again.
      const again = [];
      for await (const r of server.inferStream({ model: 'generator_ts', inputs: { COUNT: [2] } }))
        again.push(r);
      assert.deepEqual(outs(again), [0, 1, null]);
    });

    it('an aborted signal cancels the request (CANCELLED) and runs the generator’s finally', async () => {
      const rid = id('abort');
      const ac = new AbortController();
      let seen = 0;
      await assert.rejects(
        (async () => {
          for await (const _ of server.inferStream({
            model: 'generator_ts',
            id: rid,
            inputs: { COUNT: [1000], DELAY_MS: [20] },
            signal: ac.signal,
          })) {
            if (++seen === 3) ac.abort();
          }
        })(),
        { code: 'CANCELLED' },
      );
      assert.equal(seen, 3);
      await waitFor(() => finallyOf(rid) !== undefined);
      assert.ok(finallyOf(rid)! < 1000);
    });

    it('infer() on a decoupled model is UNSUPPORTED and names inferStream()', async () => {
      await assert.rejects(server.infer({ model: 'generator_ts', inputs: { COUNT: [1] } }), {
        code: 'UNSUPPORTED',
        message: /inferStream\(\)/,
      });
    });
  });

  describe('gRPC ModelStreamInfer', () => {
    it('streams the yields, then the (empty) final response; an error mid-stream arrives in-band', async () => {
      const client = new GrpcClient(`127.0.0.1:${server.grpc!.port}`);
      try {
        const stream = client.streamInfer();
        stream.send({
          model: 'generator_ts',
          inputs: [new InferInput('COUNT', [1], 'INT32').setData([3])],
          requestId: 'ok',
          enableEmptyFinalResponse: true,
        });
        const seen: [number[], boolean][] = [];
        for await (const item of stream) {
          assert.equal(item.error, undefined);
          const r = item.result;
          seen.push([r.outputs.length > 0 ? (r.asArray('OUT') as number[]) : [], r.final]);
          if (r.final) break;
        }
        assert.deepEqual(seen, [
          [[0], false],
          [[1], false],
          [[2], false],
          [[], true],
        ]);

        const failing = client.streamInfer();
        failing.send({
          model: 'generator_ts',
          inputs: [
            new InferInput('COUNT', [1], 'INT32').setData([3]),
            new InferInput('FAIL_AT', [1], 'INT32').setData([1]),
          ],
          requestId: 'bad',
        });
        failing.end();
        const items = [];
        for await (const item of failing) items.push(item);
        assert.equal(items.length, 2);
        assert.deepEqual(items[0].result?.asArray('OUT'), [0]);
        assert.match(items[1].error?.message ?? '', /generator failed at 1/);
      } finally {
        client.close();
      }
    });

    it('cancelling the call stops the generator (its finally runs)', async () => {
      const client = new GrpcClient(`127.0.0.1:${server.grpc!.port}`);
      const rid = id('grpc-cancel');
      try {
        const stream = client.streamInfer();
        stream.send({
          model: 'generator_ts',
          inputs: [
            new InferInput('COUNT', [1], 'INT32').setData([1000]),
            new InferInput('DELAY_MS', [1], 'INT32').setData([20]),
          ],
          requestId: rid,
        });
        let n = 0;
        for await (const item of stream) {
          assert.equal(item.error, undefined);
          if (++n === 2) stream.cancel();
          if (n >= 2) break;
        }
        await waitFor(() => finallyOf(rid) !== undefined);
        assert.ok(finallyOf(rid)! < 1000);
      } finally {
        client.close();
      }
    });
  });

  describe('HTTP generate_stream', () => {
    it('one event per yield, in order; an error mid-stream is an error event after them', async () => {
      const res = await postSse(`${url}/v2/models/generator_ts/generate_stream`, { COUNT: 3 });
      assert.equal(res.status, 200);
      assert.deepEqual(
        (await collect(res)).map((e) => e.data.OUT),
        [0, 1, 2],
      );
      const bad = await postSse(`${url}/v2/models/generator_ts/generate_stream`, { COUNT: 3, FAIL_AT: 2 });
      const events = (await collect(bad)).map((e) => e.data);
      assert.deepEqual(
        events.slice(0, 2).map((d) => d.OUT),
        [0, 1],
      );
      assert.equal(events.length, 3);
      assert.match(String(events[2].error), /generator failed at 2/);
    });
  });

  describe('HttpClient.generateStream against the server', () => {
    let client: HttpClient;
    before(() => {
      client = new HttpClient(url);
    });
    after(() => client.close());

    it('yields each event, parsed, in order', async () => {
      const got = [];
      for await (const e of client.generateStream('generator_ts', { COUNT: 4 })) got.push(e);
      assert.deepEqual(
        got.map((e) => [e.OUT, e.model_name, e.model_version]),
        [
          [0, 'generator_ts', '1'],
          [1, 'generator_ts', '1'],
          [2, 'generator_ts', '1'],
          [3, 'generator_ts', '1'],
        ],
      );
      // The non-streaming generate endpoint, for a model that makes exactly one response.
      const one = await client.generate('generator_sync_js', { COUNT: 0 });
      assert.equal(one.OUT, -1);
    });

    it('an error event throws NereidClientError after the events before it; a refused request throws with its status', async () => {
      const got: unknown[] = [];
      await assert.rejects(
        (async () => {
          for await (const e of client.generateStream('generator_ts', { COUNT: 4, FAIL_AT: 3 }))
            got.push(e.OUT);
        })(),
        (err: unknown) => {
          assert.ok(err instanceof NereidClientError);
          assert.match(err.message, /generator failed at 3/);
          return true;
        },
      );
      assert.deepEqual(got, [0, 1, 2]);
      await assert.rejects(
        (async () => {
          for await (const _ of client.generateStream('no_such_model', { COUNT: 1 }));
        })(),
        (err: unknown) => {
          assert.ok(err instanceof NereidClientError);
          assert.equal(err.status, 404);
          assert.match(err.message, /no_such_model/);
          return true;
        },
      );
      // An error that comes first is the reply's status (here INVALID_ARG: 400).
      await assert.rejects(
        (async () => {
          for await (const _ of client.generateStream('generator_ts', { COUNT: 5000 }));
        })(),
        (err: unknown) => {
          assert.ok(err instanceof NereidClientError);
          assert.match(err.message, /COUNT must be at most 1000/);
          assert.equal(err.status, 400);
          return true;
        },
      );
    });

    it('breaking out closes the connection: the server cancels the request and the generator’s finally runs', async () => {
      const rid = id('http-break');
      let n = 0;
      for await (const e of client.generateStream('generator_ts', { COUNT: 1000, DELAY_MS: 20, id: rid })) {
        assert.equal(e.OUT, n);
        if (++n === 2) break;
      }
      await waitFor(() => finallyOf(rid) !== undefined);
      assert.ok(finallyOf(rid)! < 1000);
    });

    it('an AbortSignal ends the loop with its reason and cancels the request on the server', async () => {
      const rid = id('http-abort');
      const ac = new AbortController();
      let n = 0;
      await assert.rejects(
        (async () => {
          for await (const _ of client.generateStream(
            'generator_ts',
            { COUNT: 1000, DELAY_MS: 20, id: rid },
            { signal: ac.signal },
          )) {
            if (++n === 2) ac.abort(new Error('caller gave up'));
          }
        })(),
        /caller gave up/,
      );
      await waitFor(() => finallyOf(rid) !== undefined);
      assert.ok(finallyOf(rid)! < 1000);
    });
  });
});
