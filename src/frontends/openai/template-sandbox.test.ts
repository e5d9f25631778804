import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { TemplateRenderError, TemplateSandbox } from './template-sandbox.js';

const CHAT =
  '{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<a>{% endif %}';
const context = { messages: [{ role: 'user', content: 'hi' }], add_generation_prompt: true };

const sandbox = new TemplateSandbox();
after(() => sandbox.close());

void test('a template renders in the sandbox', async () => {
  assert.equal(await sandbox.render(CHAT, context), '<user>hi<a>');
});

void test('a template that parses badly is refused with the parser reason', async () => {
  await assert.rejects(sandbox.render('{% for %}', context), TemplateRenderError);
  assert.equal(await sandbox.render(CHAT, context), '<user>hi<a>');
});

void test('a template that never ends is stopped, and the renders queued behind it still answer', async () => {
  // 400 million loop turns: minutes of interpreter time, so the one-second limit is what ends it.
  const runaway = '{% for i in range(20000) %}{% for j in range(20000) %}{% endfor %}{% endfor %}';
  const limited = new TemplateSandbox(1000);
  try {
    const stuck = limited.render(runaway, context);
    const queued = limited.render(CHAT, context);
    await assert.rejects(stuck, /ran for more than 1000 ms and was stopped/);
    assert.equal(await queued, '<user>hi<a>');
  } finally {
    await limited.close();
  }
});

void test('a template that allocates without bound is stopped at the heap limit, not the process', async () => {
  const hog = new TemplateSandbox(60_000, 32);
  try {
    await assert.rejects(hog.render('{{ range(1000000000) | length }}', context), /MiB a template may use/);
    assert.equal(await hog.render(CHAT, context), '<user>hi<a>');
  } finally {
    await hog.close();
  }
});
