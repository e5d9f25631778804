/**
 * Fuzz targets for system shared memory: the register parameters (region name, key, offset, byte size)
 * against real objects in a private folder (symlinks, folders, empty and short objects included), and the
 * shared-memory references of inference requests (region, offset, byte size of inputs and outputs, with
 * hostile shapes and datatypes) through prepareShmRequest / writeOutputs / release and
 * inferWithSharedMemory. Invariants: the registry never exceeds its cap, every registered window lies
 * inside its object, and a request holds its regions exactly until it is released (no leaked users).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { ALL_DATATYPES, type DataType } from '../../../src/common/datatype.js';
import { SystemSharedMemoryManager } from '../../../src/core/shm/manager.js';
import { inferWithSharedMemory, prepareShmRequest } from '../../../src/core/shm/request.js';
import type { InferenceRequest, InferenceResponse, OutputTensor } from '../../../src/core/types.js';
import { hostileDim, hostileNumber, hostileString } from '../arbitraries.js';
import { target, type CaseContext, type FuzzTarget } from '../harness.js';

/** Object name → size in bytes; 'link' is a symlink to 'obj64', 'folder' a directory. */
const OBJECTS: Readonly<Record<string, number>> = { obj64: 64, obj0: 0, obj4k: 4096, obj5: 5 };
let dir: string | undefined;

function setupObjects(): void {
  if (dir !== undefined) return;
  dir = mkdtempSync(path.join(tmpdir(), 'nereid-fuzz-shm-'));
  for (const [name, size] of Object.entries(OBJECTS))
    writeFileSync(path.join(dir, name), Buffer.alloc(size, 7));
  symlinkSync(path.join(dir, 'obj64'), path.join(dir, 'link'));
  mkdirSync(path.join(dir, 'folder'));
}

function teardownObjects(): void {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
}

const manager = (maxRegions = 6): SystemSharedMemoryManager =>
  new SystemSharedMemoryManager({ allowClientShm: true, maxRegions, ...(dir !== undefined && { dir }) });

const keyArb = fc.oneof(
  {
    arbitrary: fc.constantFrom('obj64', '/obj64', '//obj4k', 'obj0', 'obj5', 'link', 'folder', 'missing'),
    weight: 6,
  },
  {
    arbitrary: fc.constantFrom(
      '../obj64',
      'a/b',
      '.',
      '..',
      '/',
      '',
      '/triton_python_backend_shm_region_x',
      'x'.repeat(300),
      'o\u0000bj',
    ),
    weight: 2,
  },
  { arbitrary: hostileString, weight: 1 },
);
const nameArb = fc.oneof(
  { arbitrary: fc.constantFrom('r0', 'r1', 'r2', ''), weight: 6 },
  { arbitrary: hostileString, weight: 1 },
);
const sizeArb = fc.oneof({ arbitrary: fc.nat(80), weight: 4 }, { arbitrary: hostileNumber, weight: 1 });

type RegistryOp =
  | { op: 'register'; name: string; key: string; offset: number; byteSize: number }
  | { op: 'unregister'; name: string | undefined }
  | { op: 'status'; name: string | undefined };

const registryOpArb: fc.Arbitrary<RegistryOp> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constant('register' as const),
      name: nameArb,
      key: keyArb,
      offset: sizeArb,
      byteSize: sizeArb,
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('unregister' as const),
      name: fc.option(nameArb, { nil: undefined }),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('status' as const),
      name: fc.option(nameArb, { nil: undefined }),
    }),
    weight: 1,
  },
);

export const shmRegister = target({
  name: 'shm-register',
  what: 'register / unregister / status with hostile names, keys, offsets and sizes against real objects',
  weight: 4,
  arbitrary: fc.array(registryOpArb, { minLength: 1, maxLength: 8 }),
  setup() {
    setupObjects();
    return Promise.resolve();
  },
  teardown() {
    teardownObjects();
    return Promise.resolve();
  },
  async run(ops, ctx) {
    const m = manager();
    try {
      for (const o of ops) {
        if (o.op === 'register') {
          await ctx.attemptAsync('register', () => m.register(o.name, o.key, o.offset, o.byteSize));
        } else if (o.op === 'unregister') {
          await ctx.attemptAsync('unregister', () => m.unregister(o.name));
        } else {
          ctx.attempt('status', () => m.status(o.name));
        }
        assert.ok(m.size <= 6, 'the registry stays within its cap');
        for (const r of m.status()) {
          const objectName = r.key.replace(/^\/+/, '');
          const size = OBJECTS[objectName === 'link' ? 'obj64' : objectName];
          assert.ok(
            size !== undefined && objectName !== 'link',
            `registered an object it must refuse: '${r.key}'`,
          );
          assert.ok(
            r.offset + r.byte_size <= size,
            `window [${r.offset}, +${r.byte_size}) beyond '${r.key}' (${size})`,
          );
        }
      }
    } finally {
      await m.close();
    }
  },
});

// ---- requests that use shared memory ----

interface ShmTensorRef {
  readonly region: string;
  readonly offset: number;
  readonly byteSize: number;
}

const refArb: fc.Arbitrary<ShmTensorRef> = fc.record({
  region: fc.oneof(
    { arbitrary: fc.constantFrom('in', 'out', 'small', 'missing'), weight: 6 },
    { arbitrary: hostileString, weight: 1 },
  ),
  offset: fc.oneof({ arbitrary: fc.nat(70), weight: 4 }, { arbitrary: hostileNumber, weight: 1 }),
  byteSize: fc.oneof({ arbitrary: fc.nat(70), weight: 4 }, { arbitrary: hostileNumber, weight: 1 }),
});

const datatypeArb = fc.constantFrom<DataType>(...ALL_DATATYPES);

const shmRequestArb = fc.record({
  inputs: fc.array(
    fc.record({
      name: fc.constantFrom('A', 'B', 'C'),
      datatype: datatypeArb,
      shape: fc.array(hostileDim, { maxLength: 3 }),
      ref: fc.option(refArb, { freq: 4, nil: undefined }),
      data: fc.uint8Array({ maxLength: 8 }),
    }),
    { maxLength: 3 },
  ),
  outputs: fc.array(
    fc.record({
      name: fc.constantFrom('X', 'Y', 'Z'),
      ref: fc.option(refArb, { freq: 4, nil: undefined }),
      classification: fc.option(fc.nat(3), { freq: 5, nil: undefined }),
    }),
    { maxLength: 3 },
  ),
  // What the "model" answers: outputs by name with a byte count.
  produced: fc.array(fc.record({ name: fc.constantFrom('X', 'Y', 'Z', 'W'), size: fc.nat(80) }), {
    maxLength: 3,
  }),
  streamed: fc.boolean(),
});

type ShmRequestCase = typeof shmRequestArb extends fc.Arbitrary<infer T> ? T : never;

function buildRequest(c: ShmRequestCase): InferenceRequest {
  return {
    modelName: 'm',
    inputs: c.inputs.map((i) => ({
      name: i.name,
      datatype: i.datatype,
      shape: i.shape,
      data: Buffer.from(i.data),
      ...(i.ref !== undefined && { sharedMemory: i.ref }),
    })),
    outputs: c.outputs.map((o) => ({
      name: o.name,
      ...(o.ref !== undefined && { sharedMemory: o.ref }),
      ...(o.classification !== undefined && { parameters: { classification: o.classification } }),
    })),
  };
}

function responseOf(c: ShmRequestCase): InferenceResponse {
  const outputs: OutputTensor[] = c.produced.map((p) => ({
    name: p.name,
    datatype: 'UINT8',
    shape: [p.size],
    data: Buffer.alloc(p.size, 9),
  }));
  return { modelName: 'm', modelVersion: '1', id: '', outputs, parameters: {}, final: true };
}

async function registerRegions(m: SystemSharedMemoryManager): Promise<void> {
  await m.register('in', 'obj64', 0, 64);
  await m.register('out', 'obj4k', 0, 4096);
  await m.register('small', 'obj64', 60, 4);
}

/** After a request is over, nothing may still hold a region: unregistering everything empties the registry. */
async function assertNothingHeld(m: SystemSharedMemoryManager): Promise<void> {
  await m.unregister();
  assert.equal(m.size, 0, 'a region is still held by a request that is over');
}

async function runShmRequest(c: ShmRequestCase, ctx: CaseContext): Promise<void> {
  const m = manager();
  try {
    await registerRegions(m);
    const request = buildRequest(c);
    if (c.streamed) {
      // The whole path the core runs: resolve, "run the model", write the outputs, release.
      const responses = inferWithSharedMemory(m, request, async function* (resolved) {
        for (const i of resolved.inputs) assert.equal(i.sharedMemory, undefined);
        yield await Promise.resolve(responseOf(c));
      });
      await ctx.attemptAsync('inferWithSharedMemory', async () => {
        for await (const r of responses) {
          for (const o of r.outputs) {
            if (o.sharedMemory !== undefined) assert.equal(o.data.length, 0);
          }
        }
      });
    } else {
      const shm = await ctx.attemptAsync('prepareShmRequest', () => prepareShmRequest(m, request));
      if (shm !== undefined) {
        try {
          ctx.note('prepared');
          for (const i of shm.request.inputs) assert.equal(i.sharedMemory, undefined);
          await ctx.attemptAsync('writeOutputs', () => shm.writeOutputs(responseOf(c)));
        } finally {
          shm.release();
          shm.release(); // a second release must not free the regions twice
        }
      }
    }
    await assertNothingHeld(m);
  } finally {
    await m.close();
  }
}

export const shmRequest = target({
  name: 'shm-request',
  what: "requests' shared-memory inputs/outputs (hostile regions, offsets, sizes, shapes) → prepare / write / release",
  weight: 5,
  arbitrary: shmRequestArb,
  setup() {
    setupObjects();
    return Promise.resolve();
  },
  teardown() {
    teardownObjects();
    return Promise.resolve();
  },
  run: runShmRequest,
});

export const SHM_TARGETS: readonly FuzzTarget<unknown>[] = [shmRegister, shmRequest];
