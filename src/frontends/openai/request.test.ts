// Chat requests past the message and character limits are the client's mistake (400, INVALID_ARG), found
// before any chat template runs (issue 33: 200k messages or a 10 M-character message came back as 500).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_CHAT_CHARACTERS, MAX_CHAT_MESSAGES, parseChatRequest } from './request.js';

const chat = (messages: unknown[]): Record<string, unknown> => ({ model: 'm', messages });

describe('chat request limits', () => {
  it('refuses more messages than the limit with INVALID_ARG naming it', () => {
    const many = Array.from({ length: 200_000 }, () => ({ role: 'user', content: 'hi' }));
    assert.throws(
      () => parseChatRequest(chat(many)),
      (e: Error & { code?: string }) =>
        e.code === 'INVALID_ARG' &&
        e.message.includes(`${MAX_CHAT_MESSAGES}`) &&
        e.message.includes('200000'),
    );
    const atLimit = many.slice(0, MAX_CHAT_MESSAGES);
    assert.equal(parseChatRequest(chat(atLimit)).messages.length, MAX_CHAT_MESSAGES);
  });

  it('refuses more characters than the limit, in one message or spread over many', () => {
    const refused = (e: Error & { code?: string }): boolean =>
      e.code === 'INVALID_ARG' && e.message.includes(`${MAX_CHAT_CHARACTERS} characters`);
    assert.throws(() => parseChatRequest(chat([{ role: 'user', content: 'a'.repeat(10_000_000) }])), refused);
    const part = 'b'.repeat(MAX_CHAT_CHARACTERS / 4);
    assert.throws(
      () => parseChatRequest(chat(Array.from({ length: 5 }, () => ({ role: 'user', content: part })))),
      refused,
    );
    assert.equal(parseChatRequest(chat([{ role: 'user', content: part }])).messages[0].content, part);
  });
});
