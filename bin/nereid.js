#!/usr/bin/env -S node --initial-heap-size=128
// Entry point of the `nereid` command: runs the compiled CLI (built by `npm run build`; `npm start` and
// `npm test` build first; `npm ci` does not, as .npmrc turns install scripts off).
//
// Why the V8 flag: V8 starts with an old-generation limit of a few MB. A server whose live heap is ~10 MB
// and which moves large tensors then runs a full mark-compact every ~10 requests (measured: 157
// mark-compacts in 2,000 600 KB requests), which halves throughput on large payloads. Starting the heap at
// 128 MB removes them (0 mark-compacts, 2.4x the requests/s); garbage still goes young. The flag can only be
// given when the process starts, hence the shebang; `node bin/nereid.js` runs without it.
import { existsSync } from 'node:fs';

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('nereid: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
await import(main.href);
