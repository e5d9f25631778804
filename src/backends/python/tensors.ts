/**
 * Tensors across the stub boundary: descriptors plus bytes, either inline in the frame's blob (small
 * tensors: one write carries header and data) or in a /dev/shm file (tensors of at least the configured
 * threshold: one positional write/read). Descriptors from the stub are checked like any input — the model
 * is user code, and a wrong shape or size must fail its request, not the server.
 */
import { byteSizeOf, isDataType } from '../../common/datatype.js';
import { NereidError, internal } from '../../common/errors.js';
import { countBytesElements, elementCount, type Tensor } from '../../common/tensor.js';
import type { WireTensor } from './protocol.js';
import type { HostToStubArena, StubToHostReader } from './shm.js';

/** Collects the inline bytes of one frame and the descriptors pointing into them. */
export class BlobBuilder {
  readonly parts: Buffer[] = [];
  private length = 0;

  add(data: Buffer): number {
    const at = this.length;
    this.parts.push(data);
    this.length += data.length;
    return at;
  }
}

export interface TensorSink {
  readonly arena: HostToStubArena | undefined;
  /** Tensors of at least this many bytes go through the arena. */
  readonly threshold: number;
  /** The batch that keeps what is written (HostToStubArena.pin); absent: every open batch keeps it. */
  readonly pin?: number;
}

export async function describeTensor(t: Tensor, sink: TensorSink, blob: BlobBuilder): Promise<WireTensor> {
  const base = { n: t.name, d: t.datatype, s: t.shape };
  if (t.data.length >= sink.threshold && sink.arena) {
    const offset = await sink.arena.write(t.data, sink.pin);
    if (offset !== undefined) return { ...base, k: 1, o: offset, z: t.data.length };
  }
  return { ...base, k: 0, o: blob.add(t.data), z: t.data.length };
}

export async function describeTensors(
  tensors: Iterable<Tensor>,
  sink: TensorSink,
  blob: BlobBuilder,
): Promise<WireTensor[]> {
  const out: WireTensor[] = [];
  for (const t of tensors) out.push(await describeTensor(t, sink, blob));
  return out;
}

/** Shared-memory ranges read from the stub's file, to hand back to it with a FREE frame. */
export type FreedRanges = [number, number][];

function checkDescriptor(w: unknown): asserts w is WireTensor {
  const d = w as Partial<WireTensor> | null;
  const ok =
    typeof d === 'object' &&
    d !== null &&
    typeof d.n === 'string' &&
    typeof d.d === 'string' &&
    isDataType(d.d) &&
    Array.isArray(d.s) &&
    d.s.every((x) => Number.isSafeInteger(x) && x >= 0) &&
    (d.k === 0 || d.k === 1) &&
    Number.isSafeInteger(d.o) &&
    Number.isSafeInteger(d.z) &&
    (d.o ?? -1) >= 0 &&
    (d.z ?? -1) >= 0;
  if (!ok) throw internal('the Python stub sent a malformed tensor descriptor');
}

/**
 * Turns a descriptor from the stub into a Tensor: inline bytes as a view of the frame, shared-memory bytes
 * read into a new Buffer (and the range noted in `freed`). Checks the byte size against dtype and shape.
 */
export async function readTensor(
  w: unknown,
  blob: Buffer,
  reader: StubToHostReader | undefined,
  freed: FreedRanges,
): Promise<Tensor> {
  checkDescriptor(w);
  let data: Buffer;
  if (w.k === 1) {
    if (!reader) throw internal('the Python stub used shared memory it was not given');
    freed.push([w.o, w.z]);
    data = await reader.read(w.o, w.z);
  } else {
    if (w.o + w.z > blob.length) throw internal('the Python stub sent a tensor outside its frame');
    data = blob.subarray(w.o, w.o + w.z);
  }
  const count = elementCount(w.s);
  const size = byteSizeOf(w.d);
  if (size === 0) {
    const n = countBytesElements(data);
    if (n !== count) {
      throw internal(
        `output '${w.n}' has ${n} BYTES elements, but its shape [${w.s.join(',')}] needs ${count}`,
      );
    }
  } else if (data.length !== count * size) {
    throw internal(
      `output '${w.n}' has ${data.length} bytes, but ${w.d} [${w.s.join(',')}] needs ${count * size}`,
    );
  }
  return { name: w.n, datatype: w.d, shape: [...w.s], data };
}

export async function readTensors(
  list: unknown,
  blob: Buffer,
  reader: StubToHostReader | undefined,
  freed: FreedRanges,
): Promise<Tensor[]> {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw internal('the Python stub sent a malformed tensor list');
  const out: Tensor[] = [];
  let failure: NereidError | undefined;
  for (const w of list) {
    // Read on past a bad tensor so every shared-memory range of the list is noted and given back.
    try {
      out.push(await readTensor(w, blob, reader, freed));
    } catch (err) {
      failure ??= NereidError.from(err);
    }
  }
  if (failure !== undefined) throw failure;
  return out;
}
