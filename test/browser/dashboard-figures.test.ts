// The dashboard's figure arithmetic (dashboard/figures.js, a browser module with no DOM in it) run in Node:
// the TTFT quantiles read from vLLM's histogram the way Prometheus's histogram_quantile() reads it, and a
// model window's TTFT over its 30 s, or since load when no first token came in them. No browser needed.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../integration/harness.js';

type Buckets = Map<number, number>;
interface Snapshot {
  t: number;
  success: number;
  fail: number;
  refused: number;
  queueNs: number;
  computeNs: number;
  count: number;
  execs: number;
  tokens: number | null;
  ttft: Buckets | null;
}
interface Figures {
  ttftP50: number | null;
  ttftP99: number | null;
  tokensPerSec: number | null;
}
interface FiguresModule {
  histogramQuantile(buckets: Buckets, q: number): number | null;
  metricCounters(
    samples: { name: string; labels: Record<string, string>; value: number }[],
    model: string,
  ): { tokens: number | null; ttft: Buckets | null };
  ModelWindow: new () => { push(s: Snapshot): void; figures(): Figures; reportsLlm(): boolean };
}

const figures = (await import(pathToFileURL(path.join(ROOT, 'dashboard/figures.js')).href)) as FiguresModule;

/** Cumulative counts by bound, +Inf last. */
const hist = (pairs: [number, number][]): Buckets => new Map(pairs);

const snap = (t: number, tokens: number | null, ttft: Buckets | null): Snapshot => ({
  t,
  success: 0,
  fail: 0,
  refused: 0,
  queueNs: 0,
  computeNs: 0,
  count: 0,
  execs: 0,
  tokens,
  ttft,
});

describe('dashboard figures: time to first token', () => {
  it('interpolates inside the bucket as histogram_quantile does', () => {
    const cases: [Buckets, number, number | null][] = [
      // 10 observations, all in (0.01, 0.02]: the median halfway through that bucket.
      [
        hist([
          [0.01, 0],
          [0.02, 10],
          [Infinity, 10],
        ]),
        0.5,
        0.015,
      ],
      // The first bucket starts at 0.
      [
        hist([
          [0.1, 4],
          [Infinity, 4],
        ]),
        0.5,
        0.05,
      ],
      // In the +Inf bucket: the largest finite bound.
      [
        hist([
          [0.1, 1],
          [1, 1],
          [Infinity, 10],
        ]),
        0.99,
        1,
      ],
      // 3 of 4 at most 5 ms, one up to 10 ms: p99 in (5, 10] ms.
      [
        hist([
          [0.001, 0],
          [0.005, 3],
          [0.01, 4],
          [Infinity, 4],
        ]),
        0.99,
        0.005 + 0.005 * 0.96,
      ],
      // No observation: no figure.
      [
        hist([
          [0.1, 0],
          [Infinity, 0],
        ]),
        0.5,
        null,
      ],
      [new Map(), 0.5, null],
    ];
    for (const [b, q, want] of cases) {
      const got = figures.histogramQuantile(b, q);
      if (want === null) assert.equal(got, null);
      else
        assert.ok(got !== null && Math.abs(got - want) < 1e-12, `${JSON.stringify([...b])} q=${q}: ${got}`);
    }
  });

  it("reads one model's histogram series from the metrics, summed over versions", () => {
    const s = (model: string, version: string, le: string, value: number) => ({
      name: 'vllm:time_to_first_token_seconds_bucket',
      labels: { model, version, le },
      value,
    });
    const got = figures.metricCounters(
      [
        s('llm', '1', '0.01', 1),
        s('llm', '1', '+Inf', 2),
        s('llm', '2', '0.01', 3),
        s('llm', '2', '+Inf', 3),
        s('other', '1', '0.01', 9),
      ],
      'llm',
    );
    assert.deepEqual(
      [...(got.ttft ?? [])],
      [
        [0.01, 4],
        [Infinity, 5],
      ],
    );
    assert.equal(figures.metricCounters([s('other', '1', '0.01', 9)], 'llm').ttft, null);
  });

  it("gives the window's TTFT in ms, or since load when none came in the window; none for a model that is no LLM", () => {
    const before = hist([
      [0.01, 2],
      [0.1, 2],
      [Infinity, 2],
    ]);
    const after = hist([
      [0.01, 2],
      [0.1, 6],
      [Infinity, 6],
    ]);
    const w = new figures.ModelWindow();
    w.push(snap(0, 10, before));
    w.push(snap(10, 50, after));
    // The 4 first tokens of the window were all in (10, 100] ms; the 2 before it in [0, 10] are left out.
    const f = w.figures();
    assert.ok(Math.abs((f.ttftP50 ?? NaN) - 55) < 1e-9, String(f.ttftP50));
    assert.equal(f.tokensPerSec, 4);
    assert.ok(w.reportsLlm());

    const idle = new figures.ModelWindow();
    idle.push(snap(0, 10, before));
    idle.push(snap(10, 10, before));
    // Nothing new in the window: the 2 since load, both in [0, 10] ms.
    assert.ok(Math.abs((idle.figures().ttftP50 ?? NaN) - 5) < 1e-9, String(idle.figures().ttftP50));
    assert.equal(idle.figures().tokensPerSec, 0);

    const plain = new figures.ModelWindow();
    plain.push(snap(0, null, null));
    plain.push(snap(10, null, null));
    assert.deepEqual(
      [plain.figures().ttftP50, plain.figures().ttftP99, plain.figures().tokensPerSec],
      [null, null, null],
    );
    assert.equal(plain.reportsLlm(), false);
  });
});
