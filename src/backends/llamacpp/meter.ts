/**
 * The engine's occupancy, latency and token meters, reported under the names Triton's vLLM backend uses
 * (the `vllm:num_requests_running` / `vllm:num_requests_waiting` gauges, the
 * `vllm:time_to_first_token_seconds`, `vllm:time_per_output_token_seconds`,
 * `vllm:e2e_request_latency_seconds`, `vllm:request_prompt_tokens`, `vllm:request_generation_tokens`
 * histograms, the `vllm:prompt_tokens_total` / `vllm:generation_tokens_total` counters, and vLLM's prefix
 * cache counters `vllm:prefix_cache_queries_total` / `vllm:prefix_cache_hits_total`, in tokens). A request's
 * clock starts when it gets a sequence; time to first token ends with its first generated token, each
 * later token adds one inter-token gap, and the request's end adds its end-to-end time and token counts.
 */
import type { CustomMetricFamily } from '../../backend-api/backend.js';

/** A Prometheus histogram: cumulative counts at each upper bound. */
export class Histogram {
  private readonly counts: number[];
  private total = 0;
  private sum = 0;

  constructor(readonly buckets: readonly number[]) {
    this.counts = buckets.map(() => 0);
  }

  observe(v: number): void {
    this.total++;
    this.sum += v;
    for (let i = 0; i < this.buckets.length; i++) if (v <= this.buckets[i]) this.counts[i]++;
  }

  sample(labels: Readonly<Record<string, string>>) {
    return {
      labels,
      value: this.sum,
      buckets: this.buckets,
      bucketCounts: [...this.counts],
      count: this.total,
    };
  }
}

// vLLM's bucket bounds for these histograms.
const TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const TPOT = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5];
const E2E = [1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60];

/** 1, 2, 5, 10, 20, 50, ... up to `max` (vLLM's token-count buckets). */
function tokenBuckets(max: number): number[] {
  const out: number[] = [];
  for (let scale = 1; ; scale *= 10) {
    for (const m of [1, 2, 5]) {
      if (m * scale > max) return out;
      out.push(m * scale);
    }
  }
}

/** One request's clock; token() per generated token, end() once. */
export interface RequestMeter {
  token(): void;
  end(): void;
}

export class EngineMeters {
  promptTokens = 0;
  generationTokens = 0;
  /** Prompt tokens of the requests that got a sequence (vLLM's prefix cache queries). */
  prefixQueries = 0;
  /** Of those, tokens whose KV cache a sequence already held, so they were not evaluated again. */
  prefixHits = 0;
  private readonly ttft = new Histogram(TTFT);
  private readonly tpot = new Histogram(TPOT);
  private readonly e2e = new Histogram(E2E);
  private readonly promptSizes: Histogram;
  private readonly outputSizes: Histogram;

  constructor(contextSize: number) {
    this.promptSizes = new Histogram(tokenBuckets(contextSize));
    this.outputSizes = new Histogram(tokenBuckets(contextSize));
  }

  start(promptTokens: number): RequestMeter {
    this.promptTokens += promptTokens;
    const begun = performance.now();
    let last: number | undefined;
    let tokens = 0;
    let ended = false;
    return {
      token: () => {
        const now = performance.now();
        this.generationTokens++;
        tokens++;
        if (last === undefined) this.ttft.observe((now - begun) / 1000);
        else this.tpot.observe((now - last) / 1000);
        last = now;
      },
      end: () => {
        if (ended) return;
        ended = true;
        this.e2e.observe((performance.now() - begun) / 1000);
        this.promptSizes.observe(promptTokens);
        this.outputSizes.observe(tokens);
      },
    };
  }

  /** A request got a sequence for its `promptTokens`, `reused` of them already in its cache. */
  prefixCache(promptTokens: number, reused: number): void {
    this.prefixQueries += promptTokens;
    this.prefixHits += reused;
  }

  /** Every family the backend reports for a model: the engine's occupancy, then these meters. */
  families(
    labels: Readonly<Record<string, string>>,
    occupancy: { readonly running: number; readonly waiting: number },
  ): CustomMetricFamily[] {
    const one = (
      name: string,
      kind: 'counter' | 'gauge',
      description: string,
      value: number,
    ): CustomMetricFamily => ({
      name,
      kind,
      description,
      metrics: [{ labels, value }],
    });
    const hist = (name: string, description: string, h: Histogram): CustomMetricFamily => ({
      name,
      kind: 'histogram',
      description,
      metrics: [h.sample(labels)],
    });
    return [
      one(
        'vllm:num_requests_running',
        'gauge',
        'Requests holding a sequence of the context',
        occupancy.running,
      ),
      one('vllm:num_requests_waiting', 'gauge', 'Requests waiting for a sequence', occupancy.waiting),
      one('vllm:prompt_tokens_total', 'counter', 'Prompt tokens evaluated', this.promptTokens),
      one('vllm:generation_tokens_total', 'counter', 'Tokens generated', this.generationTokens),
      one(
        'vllm:prefix_cache_queries_total',
        'counter',
        'Prefix cache queries, in terms of number of queried tokens',
        this.prefixQueries,
      ),
      one(
        'vllm:prefix_cache_hits_total',
        'counter',
        'Prefix cache hits, in terms of number of cached tokens',
        this.prefixHits,
      ),
      hist('vllm:time_to_first_token_seconds', 'Time from getting a sequence to the first token', this.ttft),
      hist('vllm:time_per_output_token_seconds', 'Time between two generated tokens', this.tpot),
      hist('vllm:e2e_request_latency_seconds', 'Time from getting a sequence to the end', this.e2e),
      hist('vllm:request_prompt_tokens', 'Prompt tokens of each finished request', this.promptSizes),
      hist('vllm:request_generation_tokens', 'Tokens generated by each finished request', this.outputSizes),
    ];
  }
}
