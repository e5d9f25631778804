// Streams of one decoupled model read at different speeds (issue 33, scaled down from
// test/hostile/stream-fairness.ts): while one client holds a stream asking for ten million responses and
// reads none of them, another client's stream of the same model gets all of its responses, over HTTP
// generate_stream (SSE) and gRPC ModelStreamInfer; and the unread stream stops producing once its bounded
// queue and the transport's buffers are full (the model is held, nothing piles up). Models: the builtin
// square (a task per request), a JavaScript generator model (one worker thread for every request) and the
// Python repeat_int32_python (a thread per request in one stub process, whose one socket carries every
// request: each request has its own credit, src/backends/python/credit.ts).
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FAIRNESS_MODELS, openSlow, readFast, type SlowReader } from '../hostile/stream-fairness.js';
import {
  EXAMPLES,
  makeRepository,
  removeRepository,
  request,
  startServer,
  type TestServer,
} from './harness.js';
import { pythonFlags } from './python-support.js';

const FAST = 300;
/** The unread stream's count: the Python model takes one IN element per response, so it asks for fewer. */
const SLOW: Readonly<Record<string, number>> = {
  square_int32: 10_000_000,
  count_js: 10_000_000,
  repeat_int32_python: 1_000_000,
};

/** Responses of the model's longest request so far: response_stats has one entry per response index. */
async function produced(s: TestServer, model: string): Promise<number> {
  const res = await request(`${s.url}/v2/models/${model}/stats`);
  const stats = res.json<{ model_stats: { response_stats?: Record<string, unknown> }[] }>();
  return Object.keys(stats.model_stats[0]?.response_stats ?? {}).length;
}

/**
 * Waits until the stream has started (a large request takes a while to parse and reach the model) and the
 * count stops moving (two looks 500 ms apart agree), for at most `limitMs`.
 */
async function settled(s: TestServer, model: string, limitMs = 60_000): Promise<number> {
  const end = Date.now() + limitMs;
  let last = await produced(s, model);
  while (last === 0 && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    last = await produced(s, model);
  }
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
    cpSync(path.join(EXAMPLES, 'repeat_int32_python'), path.join(repo, 'repeat_int32_python'), {
      recursive: true,
    });
    s = await startServer([
      `--model-repository=${repo}`,
      '--max-undelivered-responses=16',
      ...pythonFlags(`fairness${process.pid}_`),
    ]);
  });

  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  for (const model of Object.keys(SLOW)) {
    // gRPC first: the count is the model's longest request so far, so the first protocol's is its own.
    for (const protocol of ['grpc', 'sse']) {
      it(`${model} over ${protocol}`, async () => {
        const port = protocol === 'sse' ? Number(new URL(s.url).port) : s.running.grpc!.port;
        let slow: SlowReader | undefined;
        try {
          slow = await openSlow(protocol, port, model, SLOW[model]);
          const before = await settled(s, model);
          assert.ok(before > 0, 'the slow stream got going');
          const fast = await readFast(protocol, port, model, FAST, 120_000);
          assert.equal(fast.responses >= FAST, true, `the fast reader got ${fast.responses} of ${FAST}`);
          assert.notEqual(fast.ms, null);
          // The unread stream stopped far short of its count: its queue (16) and the transport's buffers
          // hold what it made (for the Python model also its credit, 32), and the model waits.
          const held = await settled(s, model);
          const bound = Math.min(200_000, SLOW[model] / 4);
          assert.ok(held < bound, `the unread stream made ${held} of ${SLOW[model]} responses`);
        } finally {
          slow?.close();
        }
      });
    }
  }
});
