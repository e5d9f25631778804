// Where a chat template comes from (chat-template.ts): the config parameter, then the model folder's
// files, then the template the model's backend read from its model file (ResolvedModel.chatTemplate), with
// tokenizer_config.json's BOS / EOS text over the model file's; the rendering of a model file's template.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { ChatTemplates } from './chat-template.js';

const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-chat-template-'));
const folder = (name: string, files: Record<string, string> = {}): void => {
  mkdirSync(path.join(repo, name, '1'), { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(path.join(repo, name, f), text);
};
folder('bare');
folder('jinja', { 'chat_template.jinja': 'J' });
folder('tokens', {
  'tokenizer_config.json': JSON.stringify({ bos_token: { content: '<B>' }, eos_token: '' }),
});
const templates = new ChatTemplates([repo]);
after(async () => {
  await templates.close();
  rmSync(repo, { recursive: true, force: true });
});

const FILE = { text: 'F', bosToken: '<s>', eosToken: '</s>', origin: '1/model.gguf metadata' };

test("the model file's template serves a folder without one, and a model with no folder here", () => {
  assert.deepEqual(templates.find({ model: 'bare', modelTemplate: FILE }), {
    text: 'F',
    origin: '1/model.gguf metadata',
    bosToken: '<s>',
    eosToken: '</s>',
  });
  assert.equal(templates.find({ model: 'elsewhere', modelTemplate: FILE })?.text, 'F');
  assert.equal(templates.find({ model: 'bare' }), undefined);
});

test("the config parameter and the folder's template come first; tokenizer_config's BOS text wins", () => {
  assert.equal(templates.find({ model: 'bare', configParameter: 'C', modelTemplate: FILE })?.text, 'C');
  assert.equal(templates.find({ model: 'jinja', modelTemplate: FILE })?.text, 'J');
  const t = templates.find({ model: 'tokens', modelTemplate: FILE });
  assert.deepEqual([t?.text, t?.bosToken, t?.eosToken], ['F', '<B>', '</s>']);
});

test("renders the model file's template with its BOS / EOS text", async () => {
  const modelTemplate = {
    ...FILE,
    text: '{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{{ eos_token }}',
  };
  assert.equal(
    await templates.render({ model: 'bare', modelTemplate }, [{ role: 'user', content: 'hi' }]),
    '<s><|user|>hi</s>',
  );
  assert.equal(
    await templates.render({ model: 'bare' }, [{ role: 'user', content: 'hi' }]),
    'user: hi\nassistant:',
  );
});
