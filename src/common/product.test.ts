import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { PACKAGE_NAME, productToken } from './product.js';

test('PACKAGE_NAME is the name package.json publishes (the dashboard finds its files by it)', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    name: string;
  };
  assert.equal(pkg.name, PACKAGE_NAME);
});

test('the product token is nereid/<version>', () => {
  assert.equal(productToken('1.2.3'), 'nereid/1.2.3');
});
