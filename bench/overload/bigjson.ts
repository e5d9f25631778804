/**
 * Large JSON bodies for the overload benchmark (a child process of drive.ts): `count` inference requests
 * at once, each a JSON tensor of about `mb` megabytes (FP32 numbers written as text, as a client that does
 * not use binary data sends them), to a model that takes a [-1] FP32 input. Prints one JSON line: answers
 * by status (200, or 503 when the server's JSON budget is spent), requests lost, and their times.
 */
import { parseArgs } from 'node:util';
import { connect, requestHead, summarize } from '../../test/integration/raw-http.js';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string' },
    model: { type: 'string' },
    count: { type: 'string', default: '16' },
    mb: { type: 'string', default: '66' },
    'timeout-seconds': { type: 'string', default: '300' },
  },
});
const port = Number(values.port);
const count = Number(values.count);

/** `{"inputs":[{..., "data":[1.2345678,...]}]}` of about `mb` MB, built as bytes (no giant JS array). */
function body(mb: number): Buffer {
  const token = Buffer.from('1.2345678,');
  const n = Math.max(1, Math.floor((mb * 1e6) / token.length));
  const head = Buffer.from(
    `{"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}],"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[${n}],"data":[`,
  );
  const tail = Buffer.from('1.2345678]}]}');
  const out = Buffer.allocUnsafe(head.length + (n - 1) * token.length + tail.length);
  head.copy(out, 0);
  for (let i = 0, at = head.length; i < n - 1; i++, at += token.length) token.copy(out, at);
  tail.copy(out, out.length - tail.length);
  return out;
}

async function main(): Promise<void> {
  const json = body(Number(values.mb));
  const request = [
    requestHead('POST', `/v2/models/${values.model}/infer`, json.length, {
      'Content-Type': 'application/json',
    }),
    json,
  ];
  const t0 = performance.now();
  const outcomes = await Promise.all(
    Array.from({ length: count }, async () => {
      const c = await connect(port, values.host, Number(values['timeout-seconds']) * 1000);
      if (typeof c === 'string') return { kind: 'lost' as const, ms: 0, reason: `connect: ${c}` };
      const o = await c.send(request);
      c.close();
      return o;
    }),
  );
  const byStatus: Record<string, number> = {};
  const lost: Record<string, number> = {};
  const okMs: number[] = [];
  const refusedMs: number[] = [];
  for (const o of outcomes) {
    if (o.kind === 'lost') lost[o.reason] = (lost[o.reason] ?? 0) + 1;
    else {
      byStatus[o.status] = (byStatus[o.status] ?? 0) + 1;
      (o.status === 200 ? okMs : refusedMs).push(o.ms);
    }
  }
  const result = {
    bodyBytes: json.length,
    count,
    ok: byStatus[200] ?? 0,
    refused503: byStatus[503] ?? 0,
    byStatus,
    lost: Object.values(lost).reduce((a, b) => a + b, 0),
    lostReasons: lost,
    seconds: Math.round((performance.now() - t0) / 100) / 10,
    acceptedMs: summarize(okMs),
    refusedMs: summarize(refusedMs),
  };
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(0);
}

void main();
