/**
 * The host's work on one vt_add_sub request's stub frames, alternated round by round in one process (so
 * the machine's load falls on both alike): the EXECUTE header (JSON.stringify, for scale), and the
 * EXECUTE_DONE header read as JSON (JSON.parse plus the field checks the JSON decoder made) against the
 * binary layout's decodeExecuteDone(). Prints the median and range of µs per call over the rounds
 * (bench/README.md, "Python path: frame headers").
 *
 *   node dist/bench/python-frames.js [--rounds 21] [--calls 100000]
 */
import { parseArgs } from 'node:util';
import { encodeFrame, isJsonObject, listOf } from '../src/backends/python/frames.js';
import {
  decodeExecuteDone,
  encodeExecuteDone,
  type ExecuteDoneMessage,
  type StubRequest,
  type StubTensor,
} from '../src/backends/python/protocol.js';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '21' }, calls: { type: 'string', default: '100000' } },
});
const rounds = Number(values.rounds);
const calls = Number(values.calls);

const tensor = (name: string, offset: number): StubTensor => ({
  name,
  datatype: 'INT32',
  shape: [16],
  in_shm: false,
  offset,
  byte_size: 64,
});
// Built the way batch-input.ts builds it (optional fields spread in).
const request = (rid: number, cancelled: boolean): StubRequest => ({
  rid,
  request_id: '',
  correlation_id: '0',
  correlation_is_string: false,
  flags: 0,
  parameters: '{}',
  requested_outputs: ['OUTPUT0', 'OUTPUT1'],
  inputs: [tensor('INPUT0', 0), tensor('INPUT1', 64)],
  ...(cancelled ? { cancelled: true } : {}),
  ...(cancelled ? { traced: true } : {}),
});
const done: ExecuteDoneMessage = {
  batch: 123456,
  started: 35596337944003,
  finished: 35596338044003,
  responses: [{ rid: 1000001, final: true, outputs: [tensor('OUTPUT0', 0), tensor('OUTPUT1', 64)] }],
};
const doneJson = Buffer.from(JSON.stringify(done), 'utf8');
const doneBinary = encodeExecuteDone(done);

/** What reading the JSON EXECUTE_DONE header cost: parse, then every field checked (the old decoder). */
function decodeJson(b: Buffer): unknown {
  const parsed: unknown = JSON.parse(b.toString('utf8'));
  const h = isJsonObject(parsed) ? parsed : {};
  const responses = listOf(h.responses).map((v) => {
    const r = isJsonObject(v) ? v : {};
    return {
      rid: typeof r.rid === 'number' ? r.rid : 0,
      final: r.final === true,
      outputs: r.outputs,
      parameters: typeof r.parameters === 'string' ? r.parameters : '',
      undeclared: Array.isArray(r.undeclared) ? listOf(r.undeclared) : undefined,
    };
  });
  const rescheduled: number[] = [];
  for (const rid of listOf(h.rescheduled)) if (typeof rid === 'number') rescheduled.push(rid);
  return { batch: typeof h.batch === 'number' ? h.batch : 0, responses, rescheduled, started: h.started };
}

let rid = 1;
const cases: Record<string, () => unknown> = {
  'EXECUTE header, JSON.stringify': () => encodeFrame(3, { batch: rid, requests: [request(rid++, false)] }),
  'EXECUTE_DONE header, JSON': () => decodeJson(doneJson),
  'EXECUTE_DONE header, binary': () => decodeExecuteDone(doneBinary),
};
const results = new Map<string, number[]>(Object.keys(cases).map((k) => [k, []]));
let sink: unknown;
for (let r = 0; r < rounds; r++) {
  for (const [name, f] of Object.entries(cases)) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) sink = f();
    results.get(name)?.push(Number(process.hrtime.bigint() - t0) / calls / 1000);
  }
}
void sink;
for (const [name, v] of results) {
  v.sort((a, b) => a - b);
  const median = v[Math.floor(v.length / 2)];
  console.log(`${name}: median ${median.toFixed(2)} µs (${v[0].toFixed(2)}–${v[v.length - 1].toFixed(2)})`);
}
console.log(`EXECUTE_DONE header: ${doneJson.length} bytes as JSON, ${doneBinary.length} binary`);
