// Streams of one decoupled model read at different speeds (issue 33, scaled down from
// test/hostile/stream-fairness.ts): while one client holds a stream asking for ten million responses and
// reads none of them, another client's stream of the same model gets all of its responses, over HTTP
// generate_stream (SSE) and gRPC ModelStreamInfer; and the unread stream stops producing once its bounded
// queue and the transport's buffers are full (the model is held, nothing piles up). Models: the builtin
// square (a task per request) and a JavaScript generator model (one worker thread for every request).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FAIRNESS_MODELS, openSlow, readFast, type SlowReader } from '../hostile/stream-fairness.js';
import { makeRepository, removeRepository, request, startServer, type TestServer } from './harness.js';

const SLOW = 10_000_000;
const FAST = 300;

/** Responses of the model's longest request so far: response_stats has one entry per response index. */
async function produced(s: TestServer, model: string): Promise<number> {
  const res = await request(`${s.url}/v2/models/${model}/stats`);
  const stats = res.json<{ model_stats: { response_stats?: Record<string, unknown> }[] }>();
  return Object.keys(stats.model_stats[0]?.response_stats ?? {}).length;
}

/** Waits until the count stops moving (two looks 500 ms apart agree), for at most `limitMs`. */
async function settled(s: TestServer, model: string, limitMs = 60_000): Promise<number> {
  const end = Date.now() + limitMs;
  let last = await produced(s, model);
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, 500));
    const now = await produced(s, model);
    if (now === last) return now;
    last = now;
  }
  return last;
}

describe('a slow reader does not starve a fast one, and stays bounded', () => {
  let s: TestServer;
  let repo: string;

  before(async () => {
    repo = makeRepository(FAIRNESS_MODELS);
    s = await startServer([`--model-repository=${repo}`, '--max-undelivered-responses=16']);
  });

  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  for (const model of ['square_int32', 'count_js']) {
    for (const protocol of ['sse', 'grpc']) {
      it(`${model} over ${protocol}`, async () => {
        const port = protocol === 'sse' ? Number(new URL(s.url).port) : s.running.grpc!.port;
        let slow: SlowReader | undefined;
        try {
          slow = await openSlow(protocol, port, model, SLOW);
          const before = await settled(s, model);
          assert.ok(before > 0, 'the slow stream got going');
          const fast = await readFast(protocol, port, model, FAST, 120_000);
          assert.equal(fast.responses >= FAST, true, `the fast reader got ${fast.responses} of ${FAST}`);
          assert.notEqual(fast.ms, null);
          // The unread stream stopped far short of its count: its queue (16) and the transport's buffers
          // hold what it made, and the model waits.
          const held = await settled(s, model);
          assert.ok(held < 200_000, `the unread stream made ${held} responses`);
        } finally {
          slow?.close();
        }
      });
    }
  }
});
