// model_warmup on a real server: every sample runs on every instance before the model turns READY, with
// zero, random and file data as the model sees them; warmup leaves the statistics untouched; a warmup that
// fails (or names a file outside the model folder) fails the load with a clear reason while the server
// keeps serving.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { joinBytesElements } from '../../src/common/tensor.js';
import {
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  waitFor,
  type TestServer,
} from './harness.js';
import { spawnServer } from './spawned-server.js';

// Logs what each execution of its instance saw; X[0] = -7 makes it fail, -9 makes it wait for a file
// `gate` in the model folder (to hold a warmup open), -11 makes it take 50 ms (a long warmup).
const PROBE = `
import { existsSync } from 'node:fs';
import path from 'node:path';
import { NereidError, Tensor } from 'nereid-server';

const seen = [];
let gate = '';

export default class Probe {
  initialize(_args, context) {
    gate = path.join(context.modelDir, 'gate');
  }

  async execute(requests) {
    const batch = requests.map((r) => {
      const x = r.input('X');
      const s = r.input('S');
      return { x: Array.from(x.int32()), shape: x.shape, s: s ? s.strings() : null };
    });
    seen.push(batch);
    const first = batch[0].x[0];
    if (first === -7) throw new NereidError('INVALID_ARG', 'probe refuses -7');
    if (first === -9) while (!existsSync(gate)) await new Promise((r) => setTimeout(r, 20));
    if (first === -11) await new Promise((r) => setTimeout(r, 50));
    return requests.map((r) => ({
      outputs: [r.input('X').withName('Y'), Tensor.from('LOG', [JSON.stringify(seen)], { shape: [1, 1] })],
    }));
  }
}
`;

const config = (name: string, warmup: string, instances = 1): string => `
name: "${name}"
backend: "javascript"
max_batch_size: 4
input [
  { name: "X" data_type: TYPE_INT32 dims: [ 4 ] },
  { name: "S" data_type: TYPE_STRING dims: [ 2 ] optional: true }
]
output [
  { name: "Y" data_type: TYPE_INT32 dims: [ 4 ] },
  { name: "LOG" data_type: TYPE_STRING dims: [ 1 ] }
]
instance_group [ { count: ${instances} kind: KIND_CPU } ]
model_warmup [ ${warmup} ]
`;

const int32 = (values: number[]): Buffer => Buffer.from(new Int32Array(values).buffer);

const sample = (name: string, inputs: string, extra = ''): string =>
  `{ name: "${name}" batch_size: 1 ${extra} ${inputs} }`;
const xFile = (file: string): string =>
  `inputs { key: "X" value: { data_type: TYPE_INT32 dims: [ 4 ] input_data_file: "${file}" } }`;

const probe = (name: string, warmup: string, files: Record<string, string | Buffer> = {}, instances = 1) => ({
  config: config(name, warmup, instances),
  files: { '1/model.mjs': PROBE, ...files },
});

interface Entry {
  x: number[];
  shape: number[];
  s: string[] | null;
}

async function infer(url: string, model: string, x: number[]): Promise<{ y: number[]; log: Entry[][] }> {
  const r = await post(`${url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'X', shape: [1, 4], datatype: 'INT32', data: x }],
  });
  assert.equal(r.status, 200, r.body.toString());
  const outputs = r.json<{ outputs: { name: string; data: unknown[] }[] }>().outputs;
  const log = outputs.find((o) => o.name === 'LOG')!.data[0] as string;
  return { y: outputs.find((o) => o.name === 'Y')!.data as number[], log: JSON.parse(log) as Entry[][] };
}

async function load(url: string, model: string): Promise<{ status: number; error: string }> {
  const r = await post(`${url}/v2/repository/models/${model}/load`, {});
  return { status: r.status, error: r.status === 200 ? '' : r.json<{ error: string }>().error };
}

describe('model warmup', () => {
  let repo: string;
  let server: TestServer;
  let outside = '';

  before(async () => {
    repo = makeRepository({
      probe: probe(
        'probe',
        [
          sample(
            'zeros',
            `inputs { key: "X" value: { data_type: TYPE_INT32 dims: [ 4 ] zero_data: true } }
             inputs { key: "S" value: { data_type: TYPE_STRING dims: [ 2 ] zero_data: true } }`,
            'count: 2',
          ).replace('batch_size: 1', 'batch_size: 2'),
          sample(
            'random',
            `inputs { key: "X" value: { data_type: TYPE_INT32 dims: [ 4 ] random_data: true } }
             inputs { key: "S" value: { data_type: TYPE_STRING dims: [ 2 ] random_data: true } }`,
          ),
          sample(
            'file',
            `${xFile('x.bin')}
             inputs { key: "S" value: { data_type: TYPE_STRING dims: [ 2 ] input_data_file: "nested/s.bin" } }`,
          ),
          sample('never', xFile('x.bin')).replace('batch_size: 1', 'batch_size: 0'),
        ].join(','),
        {
          // More bytes than X needs: only the first 16 are used, as in Triton.
          'warmup/x.bin': Buffer.concat([int32([10, 20, 30, 40]), int32([99])]),
          'warmup/nested/s.bin': joinBytesElements(['a', 'bc']),
        },
        2,
      ),
      probe_throw: probe('probe_throw', sample('refused', xFile('bad.bin')), {
        'warmup/bad.bin': int32([-7, 0, 0, 0]),
      }),
      probe_escape: probe('probe_escape', sample('escape', xFile('../../probe/1/model.mjs'))),
      probe_symlink: probe('probe_symlink', sample('link', xFile('link.bin')), { 'warmup/keep': '' }),
      probe_short: probe('probe_short', sample('short', xFile('short.bin')), {
        'warmup/short.bin': int32([1]),
      }),
      probe_missing: probe('probe_missing', sample('missing', xFile('nope.bin')), { 'warmup/keep': '' }),
      probe_variable: probe(
        'probe_variable',
        sample(
          'variable',
          `inputs { key: "X" value: { data_type: TYPE_INT32 dims: [ -1 ] zero_data: true } }`,
        ),
      ),
      probe_nodata: probe(
        'probe_nodata',
        sample('nodata', `inputs { key: "X" value: { data_type: TYPE_INT32 dims: [ 4 ] } }`),
      ),
      probe_huge: probe(
        'probe_huge',
        sample(
          'huge',
          `inputs { key: "X" value: { data_type: TYPE_INT32 dims: [ 1099511627776 ] zero_data: true } }`,
        ),
      ),
      probe_count: probe(
        'probe_count',
        sample(
          'endless',
          `inputs { key: "X" value: { data_type: TYPE_INT32 dims: [ 4 ] zero_data: true } }`,
          'count: 1000000000',
        ),
      ),
      probe_dtype: probe(
        'probe_dtype',
        sample('dtype', `inputs { key: "X" value: { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } }`),
      ),
      probe_gate: probe('probe_gate', sample('gated', xFile('gate.bin')), {
        'warmup/gate.bin': int32([-9, 0, 0, 0]),
      }),
      // 10,000 iterations of 50 ms: over 8 minutes of warmup unless something stops it.
      probe_long: probe('probe_long', sample('long', xFile('slow.bin'), 'count: 10000'), {
        'warmup/slow.bin': int32([-11, 0, 0, 0]),
      }),
    });
    // A symlink from inside the warmup folder to a file outside the repository.
    outside = mkdtempSync(path.join(os.tmpdir(), 'nereid-warmup-outside-'));
    writeFileSync(path.join(outside, 'secret.bin'), Buffer.alloc(16, 1));
    symlinkSync(path.join(outside, 'secret.bin'), path.join(repo, 'probe_symlink', 'warmup', 'link.bin'));
    server = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit']);
    // Verbose logging (warmup runs are logged at level 1), set through the logging extension.
    assert.equal((await post(`${server.url}/v2/logging`, { log_verbose_level: 1 })).status, 200);
  });

  after(async () => {
    await server?.stop();
    removeRepository(repo);
    if (outside) rmSync(outside, { recursive: true, force: true });
  });

  it('runs every sample on every instance before READY, and logs it at verbose level', async () => {
    assert.deepEqual(await load(server.url, 'probe'), { status: 200, error: '' });
    for (const instance of ['probe_0_0', 'probe_0_1']) {
      for (const [name, iteration] of [
        ['zeros', 1],
        ['zeros', 2],
        ['random', 1],
        ['file', 1],
      ] as const) {
        const line = `model 'probe' instance ${instance} is running warmup sample '${name}' for iteration ${iteration}`;
        assert.ok(
          server.logs.some((l) => l.includes(line)),
          line,
        );
      }
    }
    assert.ok(server.logs.some((l) => l.includes("Skipping batch 0 warmup sample 'never'")));
    assert.ok(!server.logs.some((l) => l.includes("running warmup sample 'never'")));
  });

  it('gives the model zeros, random values, and the files of the warmup folder', async () => {
    const { y, log } = await infer(server.url, 'probe', [1, 2, 3, 4]);
    assert.deepEqual(y, [1, 2, 3, 4]);
    // This instance's executions: zeros twice (a batch of 2), random, file, then the client request.
    assert.equal(log.length, 5);
    for (const batch of log.slice(0, 2)) {
      assert.equal(batch.length, 2);
      for (const r of batch) assert.deepEqual(r, { x: [0, 0, 0, 0], shape: [1, 4], s: ['', ''] });
    }
    assert.equal(log[2].length, 1);
    assert.deepEqual(log[2][0].shape, [1, 4]);
    assert.equal(log[2][0].x.length, 4);
    assert.deepEqual(log[2][0].s, ['', ''], 'random BYTES data is empty strings, as in Triton');
    assert.deepEqual(log[3], [{ x: [10, 20, 30, 40], shape: [1, 4], s: ['a', 'bc'] }]);
    assert.deepEqual(log[4], [{ x: [1, 2, 3, 4], shape: [1, 4], s: null }]);
  });

  it('leaves the statistics untouched: only client requests count', async () => {
    const stats = async () =>
      (await request(`${server.url}/v2/models/probe/stats`)).json<{
        model_stats: {
          inference_count: number;
          execution_count: number;
          inference_stats: { success: { count: number } };
        }[];
      }>().model_stats[0];
    const before = await stats();
    await infer(server.url, 'probe', [5, 6, 7, 8]);
    const after = await stats();
    assert.equal(after.inference_count - before.inference_count, 1);
    assert.equal(after.execution_count, before.execution_count + 1);
    // Only the two client requests of these tests: the 2 × (2 + 2 + 1 + 1) warmup requests never counted.
    assert.equal(after.inference_stats.success.count, 2);
    assert.equal(after.inference_count, 2);
  });

  it("fails the load with Triton's message when a sample fails", async () => {
    const r = await load(server.url, 'probe_throw');
    assert.equal(r.status, 400);
    assert.match(r.error, /failed to run warmup sample 'refused': probe refuses -7; /);
    assert.equal((await request(`${server.url}/v2/models/probe_throw/ready`)).status, 400);
  });

  it('refuses input_data_file paths that leave the model folder, symlinks included', async () => {
    const expect: Record<string, RegExp> = {
      probe_escape:
        /input_data_file '\.\.\/\.\.\/probe\/1\/model\.mjs' of warmup 'escape' input 'X' of model 'probe_escape' leaves the model folder/,
      probe_symlink:
        /input_data_file 'link\.bin' of warmup 'link' input 'X' of model 'probe_symlink': 'warmup\/link\.bin' leads outside the model folder through a symbolic link/,
    };
    for (const [model, re] of Object.entries(expect)) {
      const r = await load(server.url, model);
      assert.equal(r.status, 400, model);
      assert.match(r.error, re, model);
      assert.ok(!r.error.includes(outside), 'the message does not name where the link leads');
    }
  });

  it('refuses short or missing files, variable dims, samples without data, and wrong datatypes', async () => {
    const expect: Record<string, RegExp> = {
      probe_short: /warmup setting expects 16 bytes, but the data provided from short\.bin only has 4 bytes/,
      probe_missing:
        /input_data_file 'nope\.bin' of warmup 'missing' input 'X' of model 'probe_missing': 'warmup\/nope\.bin' not found in the model folder/,
      probe_variable: /warmup setting expects all variable-size dimensions are specified for input 'X'/,
      probe_nodata: /warmup setting expects input 'X' to have input_data_type set/,
      probe_dtype: /inference input 'X' data-type is 'FP32', but model 'probe_dtype' expects 'INT32'/,
      probe_huge:
        /warmup sample 'huge': input 'X' with dims \[1099511627776\] needs 4398046511104 bytes, more than the limit of 268435456 bytes per warmup input/,
      probe_count: /model_warmup of probe_count asks for more than 10000 warmup requests per instance/,
    };
    for (const [model, re] of Object.entries(expect)) {
      const r = await load(server.url, model);
      assert.equal(r.status, 400, model);
      assert.match(r.error, re, model);
    }
    // The server kept serving throughout.
    assert.deepEqual((await infer(server.url, 'probe', [1, 1, 1, 1])).y, [1, 1, 1, 1]);
  });

  it('is not ready while its warmup runs, and ready once it finished', async () => {
    const loading = load(server.url, 'probe_gate');
    // The warmup sample is held open by the model until the gate file exists.
    await waitFor(() =>
      server.logs.some((l) => l.includes("model 'probe_gate' instance probe_gate_0_0 is running warmup")),
    );
    assert.equal((await request(`${server.url}/v2/models/probe_gate/ready`)).status, 400);
    const index = (await post(`${server.url}/v2/repository/index`, {})).json<
      { name: string; state?: string }[]
    >();
    assert.notEqual(index.find((e) => e.name === 'probe_gate')?.state, 'READY');
    writeFileSync(path.join(repo, 'probe_gate', 'gate'), '');
    assert.deepEqual(await loading, { status: 200, error: '' });
    assert.equal((await request(`${server.url}/v2/models/probe_gate/ready`)).status, 200);
  });

  it(
    'is cancelled by an unload: the unload answers, the load fails saying why',
    { timeout: 60_000 },
    async () => {
      const loading = load(server.url, 'probe_long');
      await waitFor(() =>
        server.logs.some((l) => l.includes("running warmup sample 'long' for iteration 3")),
      );
      const unload = await post(`${server.url}/v2/repository/models/probe_long/unload`, {});
      assert.equal(unload.status, 200, unload.body.toString());
      const loaded = await loading;
      assert.notEqual(loaded.status, 200);
      assert.match(loaded.error, /load cancelled: model 'probe_long' was unloaded/);
      assert.equal((await request(`${server.url}/v2/models/probe_long/ready`)).status, 400);
      // The server goes on serving.
      assert.equal((await request(`${server.url}/v2/health/live`)).status, 200);
    },
  );
});

describe('model warmup and shutdown', () => {
  it('SIGTERM during a long warmup: the server stops it and exits cleanly', { timeout: 90_000 }, async () => {
    const repo = makeRepository({
      probe_long: probe('probe_long', sample('long', xFile('slow.bin'), 'count: 10000'), {
        'warmup/slow.bin': int32([-11, 0, 0, 0]),
      }),
    });
    const server = await spawnServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--log-verbose=1',
    ]);
    try {
      const loading = post(`${server.url}/v2/repository/models/probe_long/load`, {}).catch(() => undefined);
      await waitFor(() => server.log().includes("running warmup sample 'long' for iteration 3"), 30_000);
      const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        server.child.once('exit', (code, signal) => resolve({ code, signal })),
      );
      server.child.kill('SIGTERM');
      const { code, signal } = await exit;
      assert.equal(signal, null, server.log().slice(-2000));
      assert.equal(code, 0, server.log().slice(-2000));
      assert.ok(!server.log().includes('terminate called'), 'no native abort');
      await loading;
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
      removeRepository(repo);
    }
  });
});
