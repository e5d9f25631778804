// A deterministic stand-in for a language model, for the OpenAI-compatible API: no weights, no download.
// The reply is one of a few fixed sentences, chosen by a hash of the prompt, and streams one word per
// response (the first word bare, the others with their leading space, so the pieces join into the
// text). It follows the contract of Triton's OpenAI frontend for vLLM-style models: `sampling_parameters`
// is a JSON object (max_tokens, stop, ignore_eos, and delay_ms: a pause before each word, at most 1 s);
// `stream` false sends the whole reply in one response; every response carries num_input_tokens (the
// prompt's words) and num_output_tokens (the words in that response). A cancelled request stops at the
// next word and counts itself in the `toy_llm_cancelled_requests_total` custom metric, so a client can
// see that closing its connection reached the model. Like an LLM backend it reports vLLM's token counter
// and time-to-first-token histogram (`vllm:generation_tokens_total`, `vllm:time_to_first_token_seconds`,
// vLLM's bucket bounds), which the dashboard shows as its tokens/s and TTFT.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  MetricFamily,
  NereidError,
  RESPONSE_COMPLETE_FINAL,
  Tensor,
  type InferenceRequest,
  type ResponseSender,
} from 'nereid-server';

const REPLIES = [
  'Machine learning finds patterns in data, so computers can predict without explicit rules.',
  'Hello! I am a tiny deterministic model bundled with Nereid.',
  'Streaming sends one word at a time, as a real language model does.',
  'The quick brown fox jumps over the lazy dog, then rests.',
];

const DEFAULT_MAX_TOKENS = 16;
const MAX_DELAY_MS = 1000;

const cancelled = new MetricFamily({
  name: 'toy_llm_cancelled_requests_total',
  description: 'toy_llm requests that were cancelled while they were generating',
  kind: 'counter',
});

const LABELS = { model: 'toy_llm', version: '1' };
const generated = new MetricFamily({
  name: 'vllm:generation_tokens_total',
  description: 'Tokens generated',
  kind: 'counter',
});
const firstToken = new MetricFamily({
  name: 'vllm:time_to_first_token_seconds',
  description: 'Time from the request reaching the model to its first token',
  kind: 'histogram',
});
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

interface Sampling {
  maxTokens: number;
  stop: string[];
  ignoreEos: boolean;
  delayMs: number;
}

/** FNV-1a over the UTF-16 code units: a stable, cheap choice of reply. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

function parseSampling(json: string | undefined): Sampling {
  const s: Sampling = { maxTokens: DEFAULT_MAX_TOKENS, stop: [], ignoreEos: false, delayMs: 0 };
  if (json === undefined || json === '') return s;
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    throw new NereidError('INVALID_ARG', 'sampling_parameters is not valid JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new NereidError('INVALID_ARG', 'sampling_parameters must be a JSON object');
  }
  const p = doc as Record<string, unknown>;
  if (p.max_tokens !== undefined) {
    if (!Number.isInteger(p.max_tokens) || (p.max_tokens as number) < 1) {
      throw new NereidError('INVALID_ARG', 'max_tokens must be a positive integer');
    }
    s.maxTokens = p.max_tokens as number;
  }
  if (typeof p.stop === 'string') s.stop = [p.stop];
  else if (Array.isArray(p.stop))
    s.stop = p.stop.filter((x): x is string => typeof x === 'string' && x !== '');
  s.ignoreEos = p.ignore_eos === true;
  if (p.delay_ms !== undefined) {
    if (typeof p.delay_ms !== 'number' || !(p.delay_ms >= 0 && p.delay_ms <= MAX_DELAY_MS)) {
      throw new NereidError('INVALID_ARG', `delay_ms must be between 0 and ${MAX_DELAY_MS}`);
    }
    s.delayMs = p.delay_ms;
  }
  return s;
}

/** The words of the reply: the chosen sentence, then (with ignore_eos) the next ones, round and round. */
function* words(prompt: string, ignoreEos: boolean): Generator<string> {
  let r = hash(prompt) % REPLIES.length;
  for (;;) {
    yield* REPLIES[r].split(' ');
    if (!ignoreEos) return;
    r = (r + 1) % REPLIES.length;
  }
}

function response(text: string, inputTokens: number, outputTokens: number) {
  return {
    outputs: [
      Tensor.fromStrings('text_output', [text], [1]),
      Tensor.from('num_input_tokens', new Uint32Array([inputTokens])),
      Tensor.from('num_output_tokens', new Uint32Array([outputTokens])),
    ],
  };
}

export default class ToyLlm {
  execute(requests: InferenceRequest[]): void {
    for (const request of requests) void this.generate(request);
  }

  private async generate(request: InferenceRequest): Promise<void> {
    const sender: ResponseSender = request.getResponseSender();
    const begun = performance.now();
    try {
      const prompt = request.input('text_input')?.strings()[0] ?? '';
      const stream = request.input('stream')?.toArray()[0] === true;
      const echo = request.input('exclude_input_in_output')?.toArray()[0] === false;
      const sampling = parseSampling(request.input('sampling_parameters')?.strings()[0]);
      const inputTokens = prompt.split(/\s+/).filter((w) => w !== '').length;

      let text = '';
      let count = 0;
      // An echoed prompt is followed by the reply, a space between them unless the prompt ends with one.
      let pending = echo ? prompt + (/\s$/.test(prompt) ? '' : ' ') : '';
      for (const word of words(prompt, sampling.ignoreEos)) {
        if (count >= sampling.maxTokens) break;
        // Without a delay, still give the worker's event loop a turn per word, so a cancellation is seen.
        if (sampling.delayMs > 0)
          await sleep(sampling.delayMs, undefined, { signal: request.signal }).catch(() => {});
        else await new Promise((resolve) => setImmediate(resolve));
        if (request.isCancelled()) {
          cancelled.metric({ model: 'toy_llm' }).increment();
          break;
        }
        const piece = count === 0 ? word : ' ' + word;
        const candidate = text + piece;
        // Like vLLM, a stop string ends the reply and is left out of it.
        const hit = sampling.stop
          .map((s) => candidate.indexOf(s))
          .filter((i) => i >= 0)
          .reduce((a, b) => Math.min(a, b), Infinity);
        if (hit !== Infinity) {
          pending += candidate.slice(text.length, Math.max(hit, text.length));
          break;
        }
        text = candidate;
        count++;
        if (count === 1) {
          firstToken.metric(LABELS, { buckets: TTFT_BUCKETS }).observe((performance.now() - begun) / 1000);
        }
        generated.metric(LABELS).increment();
        pending += piece;
        if (stream) {
          sender.send(response(pending, inputTokens, 1));
          pending = '';
        }
      }
      if (!stream) sender.send(response(pending, inputTokens, count), RESPONSE_COMPLETE_FINAL);
      else if (pending !== '') sender.send(response(pending, inputTokens, 0), RESPONSE_COMPLETE_FINAL);
      else sender.send(undefined, RESPONSE_COMPLETE_FINAL);
    } catch (err) {
      if (!sender.done)
        sender.send({ error: err instanceof Error ? err : String(err) }, RESPONSE_COMPLETE_FINAL);
    }
  }
}
