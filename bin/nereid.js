#!/usr/bin/env node
// Entry point of the `nereid` command: runs the compiled CLI (built by `npm run build`, which `npm ci`
// runs through the `prepare` script).
import { existsSync } from 'node:fs';

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('nereid: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
await import(main.href);
