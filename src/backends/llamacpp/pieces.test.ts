// The llamacpp backend's pure parts: sampling_parameters (vLLM's keys, defaults, refusals), stop strings
// held back while streaming (token-text.test.ts has the text of tokens), model.json checks, the sequence
// queue's bound and cancellation, the context budget of a request, which free sequence a prompt takes for
// its cached prefix, and the GGUF header walk with the chat template it reads.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { pickLease, reusablePrefix, type Token } from './engine.js';
import { checkBudget } from './generation.js';
import { DEFAULT_OPTIONS, parseOptions } from './options.js';
import { parseSampling } from './sampling.js';
import { SlotQueue } from './slot-queue.js';
import { StopText } from './stop-text.js';

const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof NereidError);
    return `${err.code}: ${err.message}`;
  }
  return 'no error';
};

describe('sampling_parameters', () => {
  it("takes vLLM's defaults and keys", () => {
    const d = parseSampling(undefined, 16);
    assert.deepEqual(
      [d.maxTokens, d.temperature, d.topP, d.topK, d.minP, d.seed, d.ignoreEos],
      [16, 1, 1, 0, 0, undefined, false],
    );
    const s = parseSampling(
      JSON.stringify({
        max_tokens: 5,
        temperature: 0,
        top_p: 0.5,
        top_k: 7,
        min_p: 0.1,
        seed: -1,
        stop: 'x',
        presence_penalty: 0.5,
        frequency_penalty: -0.5,
        repetition_penalty: 1.2,
        ignore_eos: true,
        n: 1,
      }),
      16,
    );
    assert.deepEqual(
      [s.maxTokens, s.temperature, s.topP, s.topK, s.minP, s.seed, s.stop, s.ignoreEos],
      [5, 0, 0.5, 7, 0.1, 0xffffffff, ['x'], true],
    );
    assert.equal(parseSampling('{"top_k": -1}', 16).topK, 0);
  });

  it('refuses what it cannot honour, naming the key', () => {
    assert.match(
      code(() => parseSampling('{"n": 2}', 16)),
      /^INVALID_ARG: .*'n'/,
    );
    assert.match(
      code(() => parseSampling('{"use_beam_search": true}', 16)),
      /beam search/,
    );
    assert.match(
      code(() => parseSampling('{"logprobs": 21}', 16)),
      /'logprobs' must be an integer from 0 to 20/,
    );
    assert.equal(parseSampling('{"logprobs": 2}', 16).logprobs, 2);
    assert.match(
      code(() => parseSampling('{"prompt_logprobs": 1}', 16)),
      /prompt logprobs/,
    );
    assert.match(
      code(() => parseSampling('{"guided_decoding": {"json": {"type": "text"}}}', 16)),
      /must name JSON types/,
    );
    assert.deepEqual(
      parseSampling('{"guided_decoding": {"json": {"anyOf": [{"type": "null"}]}}}', 16).guided,
      { kind: 'json', schema: { oneOf: [{ type: 'null' }] } },
    );
    assert.match(
      code(() => parseSampling('{"colour": 1}', 16)),
      /unsupported parameter 'colour'/,
    );
    assert.match(
      code(() => parseSampling('{"max_tokens": 0}', 16)),
      /'max_tokens'/,
    );
    assert.match(
      code(() => parseSampling('{"temperature": "hot"}', 16)),
      /'temperature'/,
    );
    assert.match(
      code(() => parseSampling('{"stop": [1]}', 16)),
      /'stop'/,
    );
    assert.match(
      code(() => parseSampling('[1]', 16)),
      /JSON object/,
    );
    assert.match(
      code(() => parseSampling('{', 16)),
      /not valid JSON/,
    );
  });
});

describe('stop strings', () => {
  it('ends before the stop string and never sends part of it', () => {
    const s = new StopText(['END']);
    assert.equal(s.push('ab'), 'ab');
    assert.equal(s.push('cE'), 'c'); // 'E' may start END
    assert.equal(s.push('N'), '');
    assert.equal(s.push('X'), 'ENX'); // it did not
    assert.equal(s.push('EN'), '');
    assert.equal(s.push('D tail'), '');
    assert.ok(s.done);
    assert.equal(s.push('more'), '');
    assert.equal(s.flush(), '');
  });

  it('flushes held-back text when the generation ends, and takes the first of several stops', () => {
    const s = new StopText(['\n\n']);
    assert.equal(s.push('hi\n'), 'hi');
    assert.equal(s.flush(), '\n');
    const t = new StopText(['yz', 'bc']);
    assert.equal(t.push('ab'), 'a');
    assert.equal(t.push('cxyz'), '');
    assert.ok(t.done);
  });
});

describe('model.json', () => {
  it('reads every setting, vLLM names too, and refuses unknown keys and bad values', () => {
    assert.deepEqual(parseOptions({}, 'model.json'), DEFAULT_OPTIONS);
    const o = parseOptions(
      { max_model_len: 256, max_num_seqs: 2, threads: 1, batch_size: 64, max_queue_size: 3 },
      'm',
    );
    assert.deepEqual(
      [o.contextSize, o.parallelSequences, o.threads, o.batchSize, o.maxQueueSize],
      [256, 2, 1, 64, 3],
    );
    assert.match(
      code(() => parseOptions({ gpu_memory_utilization: 0.5 }, 'm')),
      /unknown key 'gpu_memory_utilization'/,
    );
    assert.match(
      code(() => parseOptions({ context_size: 1.5 }, 'm')),
      /'context_size' must be an integer/,
    );
    assert.match(
      code(() => parseOptions({ context_size: 64, max_model_len: 64 }, 'm')),
      /set the same thing/,
    );
    assert.match(
      code(() => parseOptions([], 'm')),
      /JSON object/,
    );
    assert.equal(DEFAULT_OPTIONS.prefixCaching, true);
    assert.equal(parseOptions({ enable_prefix_caching: false }, 'm').prefixCaching, false);
    assert.match(
      code(() => parseOptions({ enable_prefix_caching: 0 }, 'm')),
      /'enable_prefix_caching' must be true or false/,
    );
  });
});

describe('context budget', () => {
  it('refuses a prompt over the context and max_tokens past what is left', () => {
    checkBudget(10, 20, 32);
    assert.match(
      code(() => checkBudget(40, 1, 32)),
      /prompt has 40 tokens, over .* 32/,
    );
    assert.match(
      code(() => checkBudget(10, 30, 32)),
      /max_tokens 30 is over the limit.*at most 22/,
    );
    assert.match(
      code(() => checkBudget(0, 1, 32)),
      /empty/,
    );
  });
});

describe('sequence queue', () => {
  it('hands slots out in order, bounds the queue and lets a cancelled waiter go', async () => {
    const q = new SlotQueue(['a'], 1);
    const never = new AbortController().signal;
    const first = await q.acquire(never);
    assert.equal(first, 'a');
    const leaving = new AbortController();
    const waiting = q.acquire(leaving.signal);
    await assert.rejects(
      q.acquire(never),
      (e: NereidError) => e.code === 'UNAVAILABLE' && /queue size/.test(e.message),
    );
    leaving.abort();
    await assert.rejects(waiting, (e: NereidError) => e.code === 'CANCELLED');
    assert.equal(q.waiting, 0);
    const next = q.acquire(never);
    q.release(first);
    assert.equal(await next, 'a');
    const last = q.acquire(never);
    q.close(new NereidError('UNAVAILABLE', 'gone'));
    await assert.rejects(last, /gone/);
  });

  it('lets the caller pick among free slots; a released slot still goes to the oldest waiter', async () => {
    const q = new SlotQueue(['a', 'b', 'c'], 0);
    const never = new AbortController().signal;
    assert.equal(await q.acquire(never, (free) => free.indexOf('b')), 'b');
    assert.equal(await q.acquire(never, () => 7), 'c', 'an index out of range takes the last free slot');
    assert.equal(await q.acquire(never), 'a');
    const waiter = q.acquire(never, () => assert.fail('no choice to make for a waiter'));
    q.release('c');
    assert.equal(await waiter, 'c');
  });
});

describe('prefix reuse', () => {
  const t = (...ids: number[]) => ids as Token[];

  it('reuses the shared prefix, never the last prompt token', () => {
    assert.equal(reusablePrefix(t(1, 2, 3, 4), t(1, 2, 9)), 2);
    assert.equal(reusablePrefix(t(1, 2, 3), t(1, 2, 3)), 2, 'the last token gives the first logits');
    assert.equal(reusablePrefix(t(1, 2), t(1, 2, 3, 4)), 2);
    assert.equal(reusablePrefix(t(), t(1, 2)), 0);
    assert.equal(reusablePrefix(t(5, 2), t(1, 2)), 0);
  });

  it('takes the sequence with the longest useful prefix, else an empty one, else the least recently used', () => {
    const prompt = t(1, ...Array.from({ length: 19 }, (_, i) => 100 + i)); // BOS + 19 tokens
    const holding = (shared: number, lastUsed: number, extra = 5) => ({
      kept: [...prompt.slice(0, shared), ...Array.from({ length: extra }, () => 7 as Token)],
      lastUsed,
    });
    const empty = (lastUsed: number) => ({ kept: t(), lastUsed });
    assert.equal(pickLease([holding(3, 1), holding(12, 2), holding(8, 3)], prompt), 1);
    // Only the BOS token (1 of 20: under a tenth) is shared: an empty sequence, then the oldest.
    assert.equal(pickLease([holding(1, 1), empty(5), holding(1, 2)], prompt), 1);
    assert.equal(pickLease([holding(1, 4), holding(1, 2), holding(0, 3)], prompt), 1);
    assert.equal(pickLease([holding(2, 9)], prompt), 0);
  });
});

describe('GGUF header check', () => {
  it('passes the tiny model and names what is wrong with broken files', async () => {
    const { mkdtempSync, writeFileSync, readFileSync, existsSync } = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const { ggufProblem } = await import('./gguf-check.js');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-gguf-'));
    const file = (name: string, data: Buffer): string => {
      const p = path.join(dir, name);
      writeFileSync(p, data);
      return p;
    };
    const header = (version: number, tensors: bigint, kvs: bigint): Buffer => {
      const b = Buffer.alloc(24);
      b.write('GGUF', 0, 'latin1');
      b.writeUInt32LE(version, 4);
      b.writeBigUInt64LE(tensors, 8);
      b.writeBigUInt64LE(kvs, 16);
      return b;
    };
    assert.match((await ggufProblem(file('a', Buffer.from('nope')))) ?? '', /GGUF magic/);
    assert.match((await ggufProblem(file('b', header(7, 0n, 0n)))) ?? '', /version 7/);
    assert.match((await ggufProblem(file('c', header(3, 0n, 1n << 40n)))) ?? '', /metadata entries/);
    assert.match((await ggufProblem(file('d', header(3, 0n, 1000n)))) ?? '', /cannot fit/);
    assert.match(
      (await ggufProblem(
        file('e', Buffer.concat([header(3, 0n, 1n), Buffer.from([255, 255, 255, 255, 255, 255, 255, 0])])),
      )) ?? '',
      /cannot fit/,
    );
    const tiny = path.resolve(import.meta.dirname, '../../../../.cache/llm-models/current/tiny-llama.gguf');
    if (existsSync(tiny)) {
      const bytes = readFileSync(tiny);
      assert.equal(await ggufProblem(tiny), undefined);
      assert.match((await ggufProblem(file('f', bytes.subarray(0, 2000)))) ?? '', /cannot fit|past the end/);
    }
  });

  it('reads the metadata and estimates the KV cache: 2 layers x 2 KV heads x (16 + 16) x 2 bytes a token', async () => {
    const { existsSync } = await import('node:fs');
    const path = await import('node:path');
    const { ggufHeader, kvCacheBytes } = await import('./gguf-check.js');
    const tiny = path.resolve(import.meta.dirname, '../../../../.cache/llm-models/current/tiny-llama.gguf');
    assert.ok(existsSync(tiny), `${tiny} is missing: scripts/setup-llm-models.sh writes it`);
    const header = await ggufHeader(tiny);
    assert.ok(!('problem' in header));
    assert.equal(header.metadata.get('general.architecture'), 'llama');
    assert.equal(header.metadata.get('llama.block_count'), 2);
    assert.equal(header.metadata.get('llama.context_length'), 512);
    assert.equal(kvCacheBytes(header.metadata, 1000), 256 * 1000);
    assert.equal(kvCacheBytes(new Map([['general.architecture', 'llama']]), 1000), undefined);
  });
});

describe("GGUF chat template (the OpenAI frontend's, published by the backend)", () => {
  const str = (s: string | Buffer): Buffer => {
    const b = typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
    const n = Buffer.alloc(8);
    n.writeBigUInt64LE(BigInt(b.length));
    return Buffer.concat([n, b]);
  };
  const u32 = (v: number): Buffer => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    return b;
  };
  const u64 = (v: number): Buffer => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    return b;
  };
  /** Metadata values by GGUF type: 4 = u32, 8 = string, 9 = array of strings. */
  const kv = {
    u32: (key: string, v: number): Buffer => Buffer.concat([str(key), u32(4), u32(v)]),
    string: (key: string, v: string): Buffer => Buffer.concat([str(key), u32(8), str(v)]),
    strings: (key: string, v: readonly string[]): Buffer =>
      Buffer.concat([str(key), u32(9), u32(8), u64(v.length), ...v.map(str)]),
  };
  /** A GGUF v3 file of these metadata entries and no tensors. */
  const gguf = (...kvs: Buffer[]): Buffer =>
    Buffer.concat([Buffer.from('GGUF', 'latin1'), u32(3), u64(0), u64(kvs.length), ...kvs]);
  const VOCAB = ['<unk>', '<s>', '</s>', 'a'];

  const templateOf = async (bytes: Buffer): Promise<unknown> => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const { chatTemplateOf, ggufHeader } = await import('./gguf-check.js');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-gguf-template-'));
    try {
      const file = path.join(dir, 'model.gguf');
      writeFileSync(file, bytes);
      const header = await ggufHeader(file);
      return 'problem' in header ? header : chatTemplateOf(header);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it("reads the tiny chat model's template and BOS / EOS text; the plain tiny model has none", async () => {
    const { existsSync } = await import('node:fs');
    const path = await import('node:path');
    const { chatTemplateOf, ggufHeader } = await import('./gguf-check.js');
    const models = path.resolve(import.meta.dirname, '../../../../.cache/llm-models/current');
    const chat = path.join(models, 'tiny-llama-chat.gguf');
    assert.ok(existsSync(chat), `${chat} is missing: scripts/setup-llm-models.sh writes it`);
    const header = await ggufHeader(chat);
    assert.ok(!('problem' in header));
    const t = chatTemplateOf(header);
    assert.ok(t !== undefined && 'text' in t);
    assert.ok(t.text.startsWith('{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>'), t.text);
    assert.deepEqual([t.bosToken, t.eosToken], ['<s>', '</s>']);
    const plain = await ggufHeader(path.join(models, 'tiny-llama.gguf'));
    assert.ok(!('problem' in plain));
    assert.equal(chatTemplateOf(plain), undefined);
  });

  it('finds the BOS / EOS text whichever order the keys come in, and none for an id out of range', async () => {
    assert.deepEqual(
      await templateOf(
        gguf(
          kv.u32('tokenizer.ggml.eos_token_id', 2),
          kv.string('tokenizer.chat_template', '{{ bos_token }}x{{ eos_token }}'),
          kv.strings('tokenizer.ggml.tokens', VOCAB),
          kv.u32('tokenizer.ggml.bos_token_id', 1),
        ),
      ),
      { text: '{{ bos_token }}x{{ eos_token }}', bosToken: '<s>', eosToken: '</s>' },
    );
    assert.deepEqual(
      await templateOf(
        gguf(
          kv.string('tokenizer.chat_template', 'T'),
          kv.u32('tokenizer.ggml.bos_token_id', 4),
          kv.u32('tokenizer.ggml.eos_token_id', 0xffffffff),
          kv.strings('tokenizer.ggml.tokens', VOCAB),
        ),
      ),
      { text: 'T', bosToken: '', eosToken: '' },
    );
    assert.deepEqual(await templateOf(gguf(kv.string('tokenizer.chat_template', 'T'))), {
      text: 'T',
      bosToken: '',
      eosToken: '',
    });
    assert.equal(await templateOf(gguf(kv.strings('tokenizer.ggml.tokens', VOCAB))), undefined);
  });

  it('skips a template of the wrong type or over the limits, saying why', async () => {
    const { MAX_TEMPLATE_CHARS, MAX_TOKEN_CHARS } = await import('./gguf-check.js');
    const skipped = async (bytes: Buffer): Promise<string> => {
      const r = await templateOf(bytes);
      assert.ok(typeof r === 'object' && r !== null && 'skipped' in r, JSON.stringify(r));
      return String(r.skipped);
    };
    assert.match(
      await skipped(gguf(kv.u32('tokenizer.chat_template', 7))),
      /not a string \(GGUF value type 4\)/,
    );
    assert.match(
      await skipped(gguf(kv.strings('tokenizer.chat_template', ['a', 'b']))),
      /not a string \(GGUF value type 9\)/,
    );
    assert.match(
      await skipped(gguf(kv.string('tokenizer.chat_template', 'x'.repeat(MAX_TEMPLATE_CHARS + 1)))),
      new RegExp(`${MAX_TEMPLATE_CHARS + 1} characters, over ${MAX_TEMPLATE_CHARS}`),
    );
    assert.deepEqual(
      await templateOf(gguf(kv.string('tokenizer.chat_template', 'x'.repeat(MAX_TEMPLATE_CHARS)))),
      { text: 'x'.repeat(MAX_TEMPLATE_CHARS), bosToken: '', eosToken: '' },
    );
    assert.match(
      await skipped(
        gguf(
          kv.string('tokenizer.chat_template', 'T'),
          kv.strings('tokenizer.ggml.tokens', ['<unk>', 'b'.repeat(MAX_TOKEN_CHARS + 1)]),
          kv.u32('tokenizer.ggml.bos_token_id', 1),
        ),
      ),
      /BOS token's text is \d+ characters/,
    );
  });

  it('fails a header truncated inside the template or with a bad value type, before any template', async () => {
    const whole = gguf(kv.string('tokenizer.chat_template', 'a template of some length'), kv.u32('k', 1));
    const problem = async (bytes: Buffer): Promise<string> => {
      const r = await templateOf(bytes);
      assert.ok(typeof r === 'object' && r !== null && 'problem' in r, JSON.stringify(r));
      return String(r.problem);
    };
    assert.match(await problem(whole.subarray(0, whole.length - 20)), /cannot fit|past the end/);
    assert.match(await problem(whole.subarray(0, 40)), /cannot fit|past the end/);
    const lying = gguf(Buffer.concat([str('tokenizer.chat_template'), u32(8), u64(1 << 30), str('T')]));
    assert.match(await problem(lying), /a string length \(1073741824\) cannot fit/);
    assert.match(
      await problem(gguf(Buffer.concat([str('tokenizer.chat_template'), u32(13), u64(0)]))),
      /unknown metadata value type 13/,
    );
  });
});
