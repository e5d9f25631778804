/**
 * The gRPC message reader alone (src/frontends/grpc/transport/framing.ts): microseconds to assemble one framed
 * message of `--bytes` arriving as 16 KiB DATA chunks, four to a 64 KiB read buffer as node:http2 hands
 * them over. `--dist` loads another build's reader, to compare two versions on the same machine.
 *
 * Usage: node dist/bench/grpc-framing.js [--dist <dist root>] [--bytes N] [--messages N] [--rounds N]
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

interface Reader {
  push(chunk: Buffer): { data: Buffer }[];
}

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(arg('dist', path.join(here, '..')));
const bytes = Number(arg('bytes', '614400'));
const messages = Number(arg('messages', '2000'));
const { MessageReader } = (await import(
  pathToFileURL(path.join(dist, 'src/frontends/grpc/transport/framing.js')).href
)) as {
  MessageReader: new (max: number) => Reader;
};

// The chunks of one message, as node:http2 delivers them: 16 KiB views into 64 KiB read buffers.
const framed = Buffer.alloc(5 + bytes, 3);
framed[0] = 0;
framed.writeUInt32BE(bytes, 1);
const chunks: Buffer[] = [];
for (let at = 0; at < framed.length; at += 65_536) {
  const store = Buffer.from(framed.subarray(at, at + 65_536));
  for (let i = 0; i < store.length; i += 16_384) chunks.push(store.subarray(i, i + 16_384));
}

function round(): number {
  const reader = new MessageReader(0x7fffffff);
  let got = 0;
  const start = performance.now();
  for (let m = 0; m < messages; m++) {
    for (const c of chunks) got += reader.push(c).length;
  }
  const us = ((performance.now() - start) * 1000) / messages;
  if (got !== messages) throw new Error(`assembled ${got} of ${messages}`);
  return us;
}

round(); // warm-up
const rounds = Number(arg('rounds', '5'));
const results = Array.from({ length: rounds }, round).sort((a, b) => a - b);
console.log(
  JSON.stringify({
    dist,
    bytes,
    usPerMessageMedian: Number(results[rounds >> 1].toFixed(1)),
    usBest: Number(results[0].toFixed(1)),
  }),
);
