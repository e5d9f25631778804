/**
 * InferenceResponse → a framed ModelInferResponse / ModelStreamInferResponse (the gRPC 5-byte prefix
 * included), written like Triton writes it: every output's bytes in raw_output_contents (one entry per
 * output, empty for outputs written to shared memory, which instead carry their shared-memory
 * parameters). Sizes are computed first and the message is written into one allocation; large tensors
 * are not copied at all but handed out as separate pieces between the slices of that allocation.
 */
import { invalidArg } from '../../common/errors.js';
import type { OutputTensor, Parameters } from '../../core/index.js';
import { parameterMapSize, writeParameterMap } from './parameters.js';
import { ProtoWriter, int64Size, lenFieldSize } from './wire.js';

/** Triton's limit on one gRPC message (INT32_MAX). */
export const MAX_MESSAGE_SIZE = 0x7fffffff;

/** Tensors at least this large are written by reference instead of being copied into the message. */
export const SCATTER_MIN_BYTES = 32 * 1024;

/** The fields of a ModelInferResponse (an InferenceResponse fits). */
export interface ResponseFields {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly parameters: Readonly<Parameters>;
  readonly outputs: readonly OutputTensor[];
}

const utf8 = (s: string): number => Buffer.byteLength(s, 'utf8');
const stringField = (field: number, s: string): number => (s === '' ? 0 : lenFieldSize(field, utf8(s)));

function shmParameters(t: OutputTensor): Parameters | undefined {
  const shm = t.sharedMemory;
  if (shm === undefined) return undefined;
  return {
    shared_memory_region: shm.region,
    shared_memory_offset: shm.offset,
    shared_memory_byte_size: shm.byteSize,
  };
}

function shapeSize(shape: readonly number[]): number {
  let n = 0;
  for (const d of shape) n += int64Size(d);
  return n;
}

/** Size of one InferOutputTensor body. */
function outputSize(t: OutputTensor, params: Parameters | undefined): number {
  let n = stringField(1, t.name) + stringField(2, t.datatype);
  if (t.shape.length > 0) n += lenFieldSize(3, shapeSize(t.shape));
  if (params !== undefined) n += parameterMapSize(4, params);
  return n;
}

function rawOf(t: OutputTensor): Buffer | undefined {
  return t.sharedMemory === undefined ? t.data : undefined;
}

interface Layout {
  readonly bodySize: number;
  readonly outputSizes: number[];
  readonly outputParams: (Parameters | undefined)[];
}

function layout(r: ResponseFields): Layout {
  let size = stringField(1, r.modelName) + stringField(2, r.modelVersion) + stringField(3, r.id);
  size += parameterMapSize(4, r.parameters);
  const outputSizes: number[] = [];
  const outputParams: (Parameters | undefined)[] = [];
  for (const t of r.outputs) {
    const params = shmParameters(t);
    const n = outputSize(t, params);
    outputSizes.push(n);
    outputParams.push(params);
    size += lenFieldSize(5, n);
  }
  for (const t of r.outputs) size += lenFieldSize(6, rawOf(t)?.length ?? 0);
  return { bodySize: size, outputSizes, outputParams };
}

/** Collects the message as pieces: slices of one allocation, with large tensors in between. */
class Pieces {
  readonly list: Buffer[] = [];
  private cut = 0;
  constructor(readonly w: ProtoWriter) {}

  raw(field: number, data: Buffer): void {
    this.w.lenPrefix(field, data.length);
    if (data.length >= SCATTER_MIN_BYTES) {
      this.list.push(this.w.buf.subarray(this.cut, this.w.pos), data);
      this.cut = this.w.pos;
    } else {
      this.w.buf.set(data, this.w.pos);
      this.w.pos += data.length;
    }
  }

  finish(): Buffer[] {
    if (this.w.pos > this.cut) this.list.push(this.w.buf.subarray(this.cut, this.w.pos));
    return this.list;
  }
}

function scatteredBytes(r: ResponseFields): number {
  let n = 0;
  for (const t of r.outputs) {
    const raw = rawOf(t);
    if (raw !== undefined && raw.length >= SCATTER_MIN_BYTES) n += raw.length;
  }
  return n;
}

function writeBody(w: ProtoWriter, pieces: Pieces, r: ResponseFields, l: Layout): void {
  if (r.modelName !== '') w.string(1, r.modelName, utf8(r.modelName));
  if (r.modelVersion !== '') w.string(2, r.modelVersion, utf8(r.modelVersion));
  if (r.id !== '') w.string(3, r.id, utf8(r.id));
  writeParameterMap(w, 4, r.parameters);
  r.outputs.forEach((t, i) => {
    w.lenPrefix(5, l.outputSizes[i]);
    if (t.name !== '') w.string(1, t.name, utf8(t.name));
    w.string(2, t.datatype, t.datatype.length);
    if (t.shape.length > 0) {
      w.lenPrefix(3, shapeSize(t.shape));
      for (const d of t.shape) w.int64(d);
    }
    const params = l.outputParams[i];
    if (params !== undefined) writeParameterMap(w, 4, params);
  });
  for (const t of r.outputs) pieces.raw(6, rawOf(t) ?? EMPTY);
}

const EMPTY = Buffer.alloc(0);

function checkSize(size: number): void {
  if (size > MAX_MESSAGE_SIZE) {
    throw invalidArg(
      `Response has byte size ${size} which exceeds gRPC's byte size limit ${MAX_MESSAGE_SIZE}.`,
    );
  }
}

function writePrefix(w: ProtoWriter, size: number): void {
  w.buf[0] = 0; // not compressed
  w.buf.writeUInt32BE(size, 1);
  w.pos = 5;
}

/** A framed ModelInferResponse (ModelInfer's reply). */
export function encodeInferResponse(r: ResponseFields): Buffer[] {
  const l = layout(r);
  checkSize(l.bodySize);
  const w = new ProtoWriter(Buffer.allocUnsafe(5 + l.bodySize - scatteredBytes(r)));
  writePrefix(w, l.bodySize);
  const pieces = new Pieces(w);
  writeBody(w, pieces, r, l);
  return pieces.finish();
}

/**
 * A framed ModelStreamInferResponse: `error_message` (omitted when empty) and `infer_response`, which is
 * always present (on errors it carries the request's id, as Triton does).
 */
export function encodeStreamResponse(errorMessage: string, r: ResponseFields): Buffer[] {
  const l = layout(r);
  const size = stringField(1, errorMessage) + lenFieldSize(2, l.bodySize);
  checkSize(size);
  const w = new ProtoWriter(Buffer.allocUnsafe(5 + size - scatteredBytes(r)));
  writePrefix(w, size);
  if (errorMessage !== '') w.string(1, errorMessage, utf8(errorMessage));
  w.lenPrefix(2, l.bodySize);
  const pieces = new Pieces(w);
  writeBody(w, pieces, r, l);
  return pieces.finish();
}

/** Total bytes of a framed message given as pieces. */
export function framedLength(pieces: readonly Buffer[]): number {
  let n = 0;
  for (const p of pieces) n += p.length;
  return n;
}
