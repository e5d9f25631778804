// deltaTemplate: a streamed text chunk built around its text is byte for byte the JSON of the whole chunk.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deltaTemplate, type Kind } from './generation.js';

/** The chunk as OpenAI's streaming API shapes it (and as the frontend stringified it whole). */
function expected(
  kind: Kind,
  id: string,
  created: number,
  model: string,
  text: string,
  usage: boolean,
): string {
  const choice =
    kind === 'chat'
      ? { index: 0, delta: { content: text }, logprobs: null, finish_reason: null }
      : { index: 0, text, logprobs: null, finish_reason: null };
  return JSON.stringify({
    id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created,
    model,
    choices: [choice],
    system_fingerprint: null,
    ...(usage && { usage: null }),
  });
}

const TEXTS = [
  '',
  'hello',
  ' "quoted" \\ back',
  'line\nbreak\ttab\u0001',
  'é 漢字 🙂',
  '\ud800 lone',
  '\u0000nereid-delta\u0000',
];

describe('deltaTemplate', () => {
  for (const kind of ['chat', 'completion'] as const) {
    for (const usage of [false, true]) {
      it(`gives the whole chunk's JSON (${kind}, include_usage ${usage})`, () => {
        const make = deltaTemplate(kind, 'cmpl-1', 1700000000, 'my "model"', usage);
        for (const text of TEXTS)
          assert.equal(make(text), expected(kind, 'cmpl-1', 1700000000, 'my "model"', text, usage));
      });
    }
  }

  it('builds each chunk whole when the model name is the marker', () => {
    const model = '\u0000nereid-delta\u0000';
    const make = deltaTemplate('chat', 'chatcmpl-2', 5, model, false);
    for (const text of TEXTS) assert.equal(make(text), expected('chat', 'chatcmpl-2', 5, model, text, false));
  });
});
