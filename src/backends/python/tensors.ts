/**
 * Tensors across the stub boundary: descriptors plus bytes, either inline in the frame's blob (small
 * tensors: one write carries header and data) or in a /dev/shm file (tensors of at least the configured
 * threshold: one positional write/read). Descriptors from the stub are checked like any input — the model
 * is user code, and a wrong shape or size must fail its request, not the server.
 */
import { byteSizeOf, isDataType } from '../../common/datatype.js';
import { NereidError, internal } from '../../common/errors.js';
import { countBytesElements, elementCount, type Tensor } from '../../common/tensor.js';
import { isJsonObject, listOf } from './frames.js';
import type { StubTensor } from './protocol.js';
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

export async function describeTensor(t: Tensor, sink: TensorSink, blob: BlobBuilder): Promise<StubTensor> {
  if (t.data.length >= sink.threshold && sink.arena) {
    const offset = await sink.arena.write(t.data, sink.pin);
    if (offset !== undefined) {
      return {
        name: t.name,
        datatype: t.datatype,
        shape: t.shape,
        in_shm: true,
        offset,
        byte_size: t.data.length,
      };
    }
  }
  const offset = blob.add(t.data);
  return {
    name: t.name,
    datatype: t.datatype,
    shape: t.shape,
    in_shm: false,
    offset,
    byte_size: t.data.length,
  };
}

export async function describeTensors(
  tensors: Iterable<Tensor>,
  sink: TensorSink,
  blob: BlobBuilder,
): Promise<StubTensor[]> {
  const out: StubTensor[] = [];
  for (const t of tensors) out.push(await describeTensor(t, sink, blob));
  return out;
}

/**
 * The descriptors of tensors that all travel inline (each under the shared-memory threshold, or no arena),
 * without a promise per tensor: the small-request path. Undefined when one of them belongs in /dev/shm.
 */
export function describeInline(
  tensors: Iterable<Tensor>,
  sink: TensorSink,
  blob: BlobBuilder,
): StubTensor[] | undefined {
  const list = [...tensors];
  // Checked first, so that nothing is added to the blob for a list that goes the slow way.
  if (sink.arena) for (const t of list) if (t.data.length >= sink.threshold) return undefined;
  const out: StubTensor[] = [];
  for (const t of list) {
    out.push({
      name: t.name,
      datatype: t.datatype,
      shape: t.shape,
      in_shm: false,
      offset: blob.add(t.data),
      byte_size: t.data.length,
    });
  }
  return out;
}

/** A whole number >= 0 that is exact as a double (sizes, offsets, dimensions). */
const isCount = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Shared-memory ranges read from the stub's file, to hand back to it with a FREE frame. */
export type FreedRanges = [number, number][];

function checkDescriptor(w: unknown): asserts w is StubTensor {
  const d = isJsonObject(w) ? w : undefined;
  const ok =
    d !== undefined &&
    typeof d.name === 'string' &&
    typeof d.datatype === 'string' &&
    isDataType(d.datatype) &&
    Array.isArray(d.shape) &&
    listOf(d.shape).every(isCount) &&
    typeof d.in_shm === 'boolean' &&
    isCount(d.offset) &&
    isCount(d.byte_size);
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
  if (!w.in_shm) return inlineTensor(w, blob);
  if (!reader) throw internal('the Python stub used shared memory it was not given');
  freed.push([w.offset, w.byte_size]);
  return checkedTensor(w, await reader.read(w.offset, w.byte_size));
}

function inlineTensor(w: StubTensor, blob: Buffer): Tensor {
  if (w.offset + w.byte_size > blob.length) throw internal('the Python stub sent a tensor outside its frame');
  return checkedTensor(w, blob.subarray(w.offset, w.offset + w.byte_size));
}

function checkedTensor(w: StubTensor, data: Buffer): Tensor {
  const count = elementCount(w.shape);
  const size = byteSizeOf(w.datatype);
  if (size === 0) {
    const n = countBytesElements(data);
    if (n !== count) {
      throw internal(
        `output '${w.name}' has ${n} BYTES elements, but its shape [${w.shape.join(',')}] needs ${count}`,
      );
    }
  } else if (data.length !== count * size) {
    throw internal(
      `output '${w.name}' has ${data.length} bytes, but ${w.datatype} [${w.shape.join(',')}] needs ${count * size}`,
    );
  }
  return { name: w.name, datatype: w.datatype, shape: [...w.shape], data };
}

/**
 * readTensors for a list whose tensors are all inline, without a promise per tensor: the small-response
 * path. Undefined when one of them is in shared memory (read those with readTensors); throws on a bad one.
 */
export function readInlineTensors(list: unknown, blob: Buffer): Tensor[] | undefined {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw internal('the Python stub sent a malformed tensor list');
  for (const w of list) if (!isJsonObject(w) || w.in_shm !== false) return undefined;
  const out: Tensor[] = [];
  for (const w of list) {
    checkDescriptor(w);
    out.push(inlineTensor(w, blob));
  }
  return out;
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
