import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { configurationMarkdown } from './config-docs.js';

test('docs/configuration.md matches the flag table (regenerate it when this fails)', () => {
  const committed = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
  assert.equal(committed, configurationMarkdown());
});
