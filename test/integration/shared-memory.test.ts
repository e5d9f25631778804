// The system shared-memory extension over HTTP against the real server: register real /dev/shm objects,
// infer `simple` with inputs read from them and outputs written into them, check the bytes in the objects,
// status and unregister, every misuse a hostile client can try (the server stays healthy after each), a
// region unregistered while a request uses it, and --allow-client-shm=false.
import assert from 'node:assert/strict';
import { readdirSync, readlinkSync, symlinkSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { ShmObjects } from '../../src/core/shm/shm.testkit.js';
import {
  binaryBody,
  EXAMPLES,
  makeRepository,
  post,
  removeRepository,
  request,
  splitBinaryResponse,
  startServer,
  type HttpResult,
  type TestServer,
  waitFor,
} from './harness.js';

const SLOW = `
name: "slow"
backend: "onnxruntime"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 16 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;

const int32s = (v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);
const fromInt32s = (b: Buffer): number[] => Array.from(new Int32Array(b.buffer, b.byteOffset, b.length / 4));
const IN0 = Array.from({ length: 16 }, (_, i) => i);
const IN1 = Array.from({ length: 16 }, () => 1);
const SUM = IN0.map((v, i) => v + IN1[i]);
const DIFF = IN0.map((v, i) => v - IN1[i]);

interface OutputJson {
  name: string;
  datatype: string;
  shape: number[];
  data?: unknown[];
  parameters?: Record<string, unknown>;
}
const errorOf = (r: HttpResult): string => r.json<{ error: string }>().error;
const shmParams = (region: string, byteSize: number | string, offset?: number | string) => ({
  shared_memory_region: region,
  shared_memory_byte_size: byteSize,
  ...(offset !== undefined && { shared_memory_offset: offset }),
});
const shmInput = (name: string, region: string, byteSize = 64, offset?: number) => ({
  name,
  datatype: 'INT32',
  shape: [1, 16],
  parameters: shmParams(region, byteSize, offset),
});
const shmOutput = (name: string, region: string, byteSize = 64, offset?: number) => ({
  name,
  parameters: shmParams(region, byteSize, offset),
});

/** File descriptors of this process open on objects whose name contains `marker`. */
function fdsOn(marker: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).includes(marker)) n++;
    } catch {
      // closed while listing
    }
  }
  return n;
}

describe('system shared memory over HTTP (--allow-client-shm=true)', () => {
  let s: TestServer;
  let repo: string;
  const objects = new ShmObjects();
  let in0: string;
  let in1: string;
  let out0: string;
  let out1: string;

  const register = (region: string, key: string, byteSize: number, offset?: number) =>
    post(`${s.url}/v2/systemsharedmemory/region/${encodeURIComponent(region)}/register`, {
      key,
      byte_size: byteSize,
      ...(offset !== undefined && { offset }),
    });
  const infer = (body: unknown, model = 'simple') => post(`${s.url}/v2/models/${model}/infer`, body);
  const shmInfer = (outputs: unknown[] = [shmOutput('OUTPUT0', 'out0'), shmOutput('OUTPUT1', 'out1')]) =>
    infer({ inputs: [shmInput('INPUT0', 'in0'), shmInput('INPUT1', 'in1')], outputs });

  /** After every misuse: still ready, and an ordinary request still computes. */
  async function healthy(): Promise<void> {
    assert.equal((await request(`${s.url}/v2/health/ready`)).status, 200);
    const r = await infer({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: IN0 },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: IN1 },
      ],
    });
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual(r.json<{ outputs: OutputJson[] }>().outputs[0].data, SUM);
  }

  before(async () => {
    repo = makeRepository({ slow: { config: SLOW, onnx: 'slow_fp32.onnx' } });
    s = await startServer([
      `--model-repository=${EXAMPLES}`,
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--load-model=slow',
      '--allow-client-shm=true',
    ]);
    in0 = objects.create(int32s(IN0), 'in0');
    in1 = objects.create(int32s(IN1), 'in1');
    out0 = objects.create(64, 'out0');
    out1 = objects.create(64, 'out1');
  });
  after(async () => {
    await s.stop();
    objects.cleanup();
    removeRepository(repo);
  });

  it('advertises the extension; status starts empty', async () => {
    const meta = (await request(`${s.url}/v2`)).json<{ extensions: string[] }>();
    assert.ok(meta.extensions.includes('system_shared_memory'));
    const st = await request(`${s.url}/v2/systemsharedmemory/status`);
    assert.equal(st.status, 200);
    assert.deepEqual(st.json(), []);
  });

  it('registers regions and reports them', async () => {
    for (const [region, key] of [
      ['in0', `/${in0}`],
      ['in1', `/${in1}`],
      ['out0', `/${out0}`],
      ['out1', out1],
    ]) {
      const r = await register(region, key, 64);
      assert.equal(r.status, 200, r.body.toString());
    }
    const all = (await request(`${s.url}/v2/systemsharedmemory/status`)).json<{ name: string }[]>();
    assert.deepEqual(all.map((r) => r.name).sort(), ['in0', 'in1', 'out0', 'out1']);
    const one = await request(`${s.url}/v2/systemsharedmemory/region/out1/status`);
    assert.deepEqual(one.json(), [{ name: 'out1', key: out1, offset: 0, byte_size: 64 }]);
    const unknown = await request(`${s.url}/v2/systemsharedmemory/region/nope/status`);
    assert.equal(unknown.status, 404);
    assert.equal(errorOf(unknown), "Unable to find system shared memory region: 'nope'");
  });

  it('CUDA shared memory answers as Triton without a GPU: no regions, unregister is a no-op', async () => {
    const meta = (await request(`${s.url}/v2`)).json<{ extensions: string[] }>();
    assert.ok(meta.extensions.includes('cuda_shared_memory'));
    const st = await request(`${s.url}/v2/cudasharedmemory/status`);
    assert.equal(st.status, 200);
    assert.deepEqual(st.json(), []);
    const unknown = await request(`${s.url}/v2/cudasharedmemory/region/nope/status`);
    assert.equal(unknown.status, 404);
    assert.equal(errorOf(unknown), "Unable to find cuda shared memory region: 'nope'");
    // Region names are one namespace: a system region is named as such.
    const system = await request(`${s.url}/v2/cudasharedmemory/region/out1/status`);
    assert.equal(system.status, 404);
    assert.equal(
      errorOf(system),
      "The region named 'out1' is registered as system shared memory, not CUDA shared memory",
    );
    for (const path of ['/v2/cudasharedmemory/unregister', '/v2/cudasharedmemory/region/out1/unregister']) {
      const r = await post(`${s.url}${path}`, '');
      assert.equal(r.status, 200, r.body.toString());
    }
    // Unregistering CUDA regions leaves system regions alone.
    const all = (await request(`${s.url}/v2/systemsharedmemory/status`)).json<{ name: string }[]>();
    assert.deepEqual(all.map((r) => r.name).sort(), ['in0', 'in1', 'out0', 'out1']);
  });

  it("CUDA register: malformed requests get Triton's texts, a well-formed one needs a GPU", async () => {
    const b64 = Buffer.alloc(64, 1).toString('base64');
    const good = { raw_handle: { b64 }, device_id: 0, byte_size: 64 };
    // [region (undefined: none in the path), body, Triton's text]; every one is a 400.
    const cases: [string | undefined, unknown, string][] = [
      [undefined, {}, "'region name' is necessary to register cuda shared memory region"],
      ['c', {}, "Shared memory register request has no 'raw_handle' field"],
      ['c', { ...good, raw_handle: 'x' }, "attempt to access non-existing object member 'b64'"],
      ['c', { ...good, raw_handle: { b64: 5 } }, 'attempt to access JSON non-string as string'],
      [
        'c',
        { raw_handle: { b64 }, device_id: 0 },
        "attempt to access non-existing object member 'byte_size'",
      ],
      [
        'c',
        { raw_handle: { b64 }, byte_size: 64 },
        "attempt to access non-existing object member 'device_id'",
      ],
      ['c', { ...good, device_id: -1 }, 'attempt to access JSON non-unsigned-integer as unsigned-integer'],
      [
        'c',
        { ...good, raw_handle: { b64: 'AAAA' } },
        "'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t",
      ],
      [
        'c',
        { ...good, raw_handle: { b64: '!!!!' } },
        "'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t",
      ],
      ['out1', good, "shared memory region 'out1' already in manager"],
      ['c', good, "failed to register CUDA shared memory region: 'c', GPUs not supported"],
    ];
    for (const [region, body, error] of cases) {
      const path = region === undefined ? '' : `/region/${region}`;
      const r = await post(`${s.url}/v2/cudasharedmemory${path}/register`, body);
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.body.toString()}`);
      assert.equal(errorOf(r), error);
    }
    assert.deepEqual((await request(`${s.url}/v2/cudasharedmemory/status`)).json(), []);
    await healthy();
  });

  it('infers with inputs from shared memory and writes outputs into it', async () => {
    const r = await shmInfer();
    assert.equal(r.status, 200, r.body.toString());
    assert.equal(r.headers.get('content-type'), 'application/json');
    const outputs = r.json<{ outputs: OutputJson[] }>().outputs;
    assert.deepEqual(outputs, [
      {
        name: 'OUTPUT0',
        datatype: 'INT32',
        shape: [1, 16],
        parameters: { shared_memory_region: 'out0', shared_memory_byte_size: 64 },
      },
      {
        name: 'OUTPUT1',
        datatype: 'INT32',
        shape: [1, 16],
        parameters: { shared_memory_region: 'out1', shared_memory_byte_size: 64 },
      },
    ]);
    assert.deepEqual(fromInt32s(objects.read(out0)), SUM);
    assert.deepEqual(fromInt32s(objects.read(out1)), DIFF);
    await healthy();
  });

  it('reads the bytes current at request time', async () => {
    objects.write(in1, int32s(IN1.map(() => 5)));
    assert.equal((await shmInfer()).status, 200);
    assert.deepEqual(
      fromInt32s(objects.read(out0)),
      IN0.map((v) => v + 5),
    );
    objects.write(in1, int32s(IN1));
  });

  it('mixes shared memory with JSON and binary tensors', async () => {
    const mixed = await infer({
      inputs: [shmInput('INPUT0', 'in0'), { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: IN1 }],
      outputs: [shmOutput('OUTPUT0', 'out0'), { name: 'OUTPUT1' }],
    });
    assert.equal(mixed.status, 200, mixed.body.toString());
    const outs = mixed.json<{ outputs: OutputJson[] }>().outputs;
    assert.equal(outs[0].data, undefined);
    assert.deepEqual(outs[1].data, DIFF);

    objects.write(out0, Buffer.alloc(64));
    const { body, headers } = binaryBody(
      {
        inputs: [
          shmInput('INPUT0', 'in0'),
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
        ],
        outputs: [shmOutput('OUTPUT0', 'out0'), { name: 'OUTPUT1' }],
        parameters: { binary_data_output: true },
      },
      [int32s(IN1)],
    );
    const bin = await request(`${s.url}/v2/models/simple/infer`, { method: 'POST', body, headers });
    assert.equal(bin.status, 200, bin.body.toString());
    const split = splitBinaryResponse(bin);
    assert.equal(split.blobs.has('OUTPUT0'), false, 'no binary blob for an output written to shared memory');
    assert.deepEqual(split.header.outputs[0].parameters, {
      shared_memory_region: 'out0',
      shared_memory_byte_size: 64,
    });
    assert.deepEqual(fromInt32s(split.blobs.get('OUTPUT1')!), DIFF);
    assert.deepEqual(fromInt32s(objects.read(out0)), SUM);
  });

  it('honours region offsets and tensor offsets; overlapping regions are fine', async () => {
    // One object: a page of padding, INPUT0 at +0, INPUT1 at +64, outputs at +128 and +192.
    const page = 4096;
    const content = Buffer.alloc(page + 256);
    int32s(IN0).copy(content, page);
    int32s(IN1).copy(content, page + 64);
    const key = objects.create(content, 'big');
    assert.equal((await register('big', key, 256, page)).status, 200);
    assert.equal((await register('big_tail', key, 128, page + 128)).status, 200); // overlaps 'big'
    const r = await infer({
      inputs: [shmInput('INPUT0', 'big', 64, 0), shmInput('INPUT1', 'big', 64, 64)],
      outputs: [shmOutput('OUTPUT0', 'big', 64, 128), shmOutput('OUTPUT1', 'big_tail', 64, 64)],
    });
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual(r.json<{ outputs: OutputJson[] }>().outputs[1].parameters, {
      shared_memory_region: 'big_tail',
      shared_memory_offset: 64,
      shared_memory_byte_size: 64,
    });
    const now = objects.read(key);
    assert.deepEqual(fromInt32s(now.subarray(page + 128, page + 192)), SUM);
    assert.deepEqual(fromInt32s(now.subarray(page + 192, page + 256)), DIFF);
    assert.deepEqual(now.subarray(0, page), Buffer.alloc(page), 'nothing written outside the regions');
  });

  it('refuses hostile and malformed registrations', async () => {
    const secret = objects.create(Buffer.from('not yours'), 'secret');
    const link = objects.name('link');
    symlinkSync(`/dev/shm/${secret}`, `/dev/shm/${link}`);
    const cases: [string, unknown, number, RegExp][] = [
      [
        'r',
        { key: '../x', byte_size: 8 },
        400,
        /^cannot register shared memory region 'r' - invalid shm key '\.\.\/x'/,
      ],
      ['r', { key: '/tmp/x', byte_size: 8 }, 400, /invalid shm key '\/tmp\/x'/],
      ['r', { key: '/dev/shm/x', byte_size: 8 }, 400, /invalid shm key/],
      ['r', { key: '/../../etc/passwd', byte_size: 8 }, 400, /invalid shm key/],
      [
        'r',
        { key: '/', byte_size: 8 },
        400,
        /^cannot register shared memory region 'r' - invalid shm key '\/'$/,
      ],
      ['r', { key: 'x\u0000y', byte_size: 8 }, 400, /invalid shm key 'x\\x00y'/],
      ['r', { key: 'k'.repeat(300), byte_size: 8 }, 400, /longer than 255 bytes/],
      ['r', { key: '/triton_python_backend_shm_region_1', byte_size: 8 }, 400, /reserved prefix/],
      [
        'r',
        { key: `/${link}`, byte_size: 8 },
        400,
        /^Unable to open shared memory region: '\/.*': is a symbolic link$/,
      ],
      [
        'r',
        { key: '/nereid-no-such-object', byte_size: 8 },
        400,
        /^Unable to open shared memory region: '\/nereid-no-such-object'/,
      ],
      ['r', { key: in0, byte_size: 65 }, 400, /^failed to register shared memory region 'r': invalid args$/],
      ['r', { key: in0, byte_size: 1, offset: 64 }, 400, /invalid args/],
      ['r', { key: in0, byte_size: 8, offset: 18446744073709551584 }, 400, /invalid args/],
      ['r', { key: in0, byte_size: -8 }, 400, /Unable to parse 'byte_size'/],
      ['r', { key: in0, byte_size: 8, offset: 1.5 }, 400, /Unable to parse 'offset'/],
      ['r', { key: in0, byte_size: '8' }, 400, /Unable to parse 'byte_size'/],
      ['r', { key: 7, byte_size: 8 }, 400, /Unable to parse 'key'/],
      ['r', { byte_size: 8 }, 400, /^Shared memory register request has no 'key' field$/],
      ['r', { key: in0 }, 400, /^Shared memory register request has no 'byte_size' field$/],
      ['r', [], 400, /no 'key' field/],
      ['in0', { key: in0, byte_size: 64 }, 400, /^shared memory region 'in0' already in manager$/],
    ];
    for (const [region, body, status, message] of cases) {
      const r = await post(`${s.url}/v2/systemsharedmemory/region/${region}/register`, body);
      assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.body.toString()}`);
      assert.match(errorOf(r), message, JSON.stringify(body));
    }
    const noRegion = await post(`${s.url}/v2/systemsharedmemory/register`, { key: in0, byte_size: 8 });
    assert.equal(noRegion.status, 400);
    assert.equal(errorOf(noRegion), "'region name' is necessary to register system shared memory region");
    assert.equal((await request(`${s.url}/v2/systemsharedmemory/region/r/register`)).status, 405);
    assert.equal((await post(`${s.url}/v2/systemsharedmemory/status`, {})).status, 405);
    const names = (await request(`${s.url}/v2/systemsharedmemory/status`)).json<{ name: string }[]>();
    assert.equal(
      names.some((r) => r.name === 'r'),
      false,
      'no failed registration left a region behind',
    );
    await healthy();
  });

  it('refuses hostile and malformed tensor references', async () => {
    const base = [shmInput('INPUT0', 'in0'), shmInput('INPUT1', 'in1')];
    const cases: [unknown, number, RegExp][] = [
      [
        { inputs: [shmInput('INPUT0', 'nope'), shmInput('INPUT1', 'in1')] },
        404,
        /^Unable to find shared memory region: 'nope'$/,
      ],
      [
        { inputs: base, outputs: [shmOutput('OUTPUT0', 'out0', 64, 18446744073709551584)] },
        400,
        /^Invalid offset for shared memory region: 'out0'$/,
      ],
      [
        { inputs: base, outputs: [shmOutput('OUTPUT0', 'out0', 64, 64)] },
        400,
        /^Invalid offset for shared memory region/,
      ],
      [
        { inputs: base, outputs: [shmOutput('OUTPUT0', 'out0', 18446744073709551584, 32)] },
        400,
        /^Integer overflow detected: byte_size \(\d+\) \+ offset \(32\) exceeds maximum value/,
      ],
      [
        { inputs: base, outputs: [shmOutput('OUTPUT0', 'out0', 64, 1)] },
        400,
        /^Invalid offset \+ byte size for shared memory region: 'out0'$/,
      ],
      [
        { inputs: base, outputs: [shmOutput('OUTPUT0', 'out0', 32)] },
        400,
        /^shared memory size specified with the request for output 'OUTPUT0' \(32 bytes\) should be at least 64 bytes to hold the results$/,
      ],
      [
        { inputs: [shmInput('INPUT0', 'in0'), shmInput('INPUT1', 'in1', 32)] },
        400,
        /^input byte size mismatch for input 'INPUT1' for model 'simple'\. Expected 64, got 32$/,
      ],
      [
        { inputs: [shmInput('INPUT0', 'in0'), { ...shmInput('INPUT1', 'in1'), data: IN1 }] },
        400,
        /^Input must set only one of the following fields/,
      ],
      [
        { inputs: [{ ...shmInput('INPUT0', 'in0'), parameters: { shared_memory_region: 'in0' } }, base[1]] },
        400,
        /^'shared_memory_byte_size' must be specified along with 'shared_memory_region'/,
      ],
      [
        {
          inputs: base,
          outputs: [{ name: 'OUTPUT0', parameters: { ...shmParams('out0', 64), classification: 2 } }],
        },
        400,
        /^Output can't set both 'shared_memory_region' and 'classification'$/,
      ],
      [
        {
          inputs: base,
          outputs: [{ name: 'OUTPUT0', parameters: { ...shmParams('out0', 64), binary_data: true } }],
        },
        400,
        /^Output can't set both 'shared_memory_region' and 'binary_data'$/,
      ],
      [
        { inputs: [shmInput('INPUT0', 'in0', 64, -4), base[1]] },
        400,
        /Unable to parse 'shared_memory_offset'/,
      ],
      [
        { inputs: [shmInput('INPUT0', 'in0'), shmInput('BOGUS', 'in1')] },
        400,
        /unexpected inference input 'BOGUS'/,
      ],
    ];
    const before = objects.read(out0);
    for (const [body, status, message] of cases) {
      const r = await infer(body);
      assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.body.toString()}`);
      assert.match(errorOf(r), message, JSON.stringify(body));
    }
    assert.deepEqual(objects.read(out0), before, 'no failed request wrote into an output region');
    // Every failed request let go of its regions: they all unregister at once.
    await healthy();
  });

  it('an input region truncated by its owner fails the request cleanly', async () => {
    const key = objects.create(64, 'shrinking');
    assert.equal((await register('shrinking', key, 64)).status, 200);
    objects.write(key, Buffer.alloc(8));
    const r = await infer({ inputs: [shmInput('INPUT0', 'shrinking'), shmInput('INPUT1', 'in1')] });
    assert.equal(r.status, 400);
    assert.match(errorOf(r), /is smaller than registered/);
    await healthy();
  });

  it('a region unregistered while a request uses it stays until the request is done', async () => {
    const fp = Buffer.from(new Float32Array(16).fill(0.5).buffer);
    const sin = objects.create(fp, 'slow_in');
    const sout = objects.create(Buffer.alloc(64, 0xff), 'slow_out'); // the model answers zeros
    assert.equal((await register('slow_in', sin, 64)).status, 200);
    assert.equal((await register('slow_out', sout, 64)).status, 200);
    const pending = infer(
      {
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], parameters: shmParams('slow_in', 64) }],
        outputs: [shmOutput('OUTPUT0', 'slow_out')],
      },
      'slow',
    );
    await new Promise((r) => setTimeout(r, 200)); // the model is computing now
    assert.equal((await post(`${s.url}/v2/systemsharedmemory/region/slow_out/unregister`, '')).status, 200);
    assert.equal((await post(`${s.url}/v2/systemsharedmemory/region/slow_in/unregister`, '')).status, 200);
    const during = (await request(`${s.url}/v2/systemsharedmemory/status`)).json<{ name: string }[]>();
    assert.ok(
      during.some((r) => r.name === 'slow_out'),
      'still listed while in use (Triton)',
    );
    const r = await pending;
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual(objects.read(sout), Buffer.alloc(64), 'the output reached the region');
    const afterwards = (await request(`${s.url}/v2/systemsharedmemory/status`)).json<{ name: string }[]>();
    assert.equal(
      afterwards.some((x) => x.name === 'slow_out' || x.name === 'slow_in'),
      false,
    );
    await waitFor(() => fdsOn(sout) === 0); // the last user closes it, asynchronously
    await healthy();
  });

  it('unregisters one region, unknown ones (no-op), then all; descriptors are closed', async () => {
    assert.ok(fdsOn(objects.prefix) > 0);
    const one = await post(`${s.url}/v2/systemsharedmemory/region/out1/unregister`, '');
    assert.equal(one.status, 200);
    assert.equal((await post(`${s.url}/v2/systemsharedmemory/region/never/unregister`, '')).status, 200);
    const r = await shmInfer();
    assert.equal(r.status, 404);
    assert.equal(errorOf(r), "Unable to find shared memory region: 'out1'");
    assert.equal((await post(`${s.url}/v2/systemsharedmemory/unregister`, '')).status, 200);
    assert.deepEqual((await request(`${s.url}/v2/systemsharedmemory/status`)).json(), []);
    assert.equal(fdsOn(objects.prefix), 0, 'every region descriptor is closed');
    await healthy();
  });

  it('server stop closes every descriptor', async () => {
    const key = objects.create(8, 'atstop');
    const srv = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--allow-client-shm=true',
    ]);
    const r = await post(`${srv.url}/v2/systemsharedmemory/region/atstop/register`, { key, byte_size: 8 });
    assert.equal(r.status, 200);
    assert.equal(fdsOn(key), 1);
    await srv.stop();
    assert.equal(fdsOn(key), 0);
  });
});

describe('system shared memory with --allow-client-shm left at its default (false)', () => {
  let s: TestServer;
  const objects = new ShmObjects();
  before(async () => {
    s = await startServer([
      `--model-repository=${EXAMPLES}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
    ]);
  });
  after(async () => {
    await s.stop();
    objects.cleanup();
  });

  it('status answers (empty); register, unregister and shared-memory tensors are refused', async () => {
    const disabled =
      "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";
    const key = objects.create(64);
    const st = await request(`${s.url}/v2/systemsharedmemory/status`);
    assert.equal(st.status, 200);
    assert.deepEqual(st.json(), []);
    for (const r of [
      await post(`${s.url}/v2/systemsharedmemory/region/r/register`, { key, byte_size: 64 }),
      await post(`${s.url}/v2/systemsharedmemory/register`, {}),
      await post(`${s.url}/v2/systemsharedmemory/region/r/unregister`, ''),
      await post(`${s.url}/v2/systemsharedmemory/unregister`, ''),
      await post(`${s.url}/v2/models/simple/infer`, {
        inputs: [shmInput('INPUT0', 'r'), shmInput('INPUT1', 'r')],
      }),
      await post(`${s.url}/v2/models/simple/infer`, {
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: IN0 },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: IN1 },
        ],
        outputs: [shmOutput('OUTPUT0', 'r')],
      }),
    ]) {
      assert.equal(r.status, 501, r.body.toString());
      assert.equal(errorOf(r), disabled);
    }
    assert.deepEqual((await request(`${s.url}/v2/systemsharedmemory/status`)).json(), []);
    assert.equal(fdsOn(key), 0);
    // CUDA shared memory follows the same rule: status answers, register and unregister are refused.
    assert.deepEqual((await request(`${s.url}/v2/cudasharedmemory/status`)).json(), []);
    for (const r of [
      await post(`${s.url}/v2/cudasharedmemory/region/c/register`, {
        raw_handle: { b64: Buffer.alloc(64).toString('base64') },
        device_id: 0,
        byte_size: 64,
      }),
      await post(`${s.url}/v2/cudasharedmemory/register`, {}),
      await post(`${s.url}/v2/cudasharedmemory/region/c/unregister`, ''),
      await post(`${s.url}/v2/cudasharedmemory/unregister`, ''),
    ]) {
      assert.equal(r.status, 501, r.body.toString());
      assert.equal(errorOf(r), disabled);
    }
    assert.equal((await request(`${s.url}/v2/health/ready`)).status, 200);
  });
});
