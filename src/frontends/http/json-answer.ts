/**
 * Large JSON inference answers in slices (issue 33): one request with a 61 MiB input answered as JSON used
 * to stop the event loop for seconds while its text was built whole (and four at once took 4 GB). Here an
 * answer is planned first — every check that can refuse it (too large for JSON, data not matching its
 * shape, BYTES that are not UTF-8 and must go as binary) runs before a byte is written — and its text is
 * then produced a slice of elements at a time, so whoever writes it (json-answer-send.ts) can hand each
 * slice to the socket and let the loop run between slices. The text is the same as encodeInferResponse's.
 */
import { isUtf8 } from 'node:buffer';
import { byteSizeOf } from '../../common/datatype.js';
import { internal } from '../../common/errors.js';
import type { InferenceResponse, OutputTensor } from '../../core/index.js';
import {
  binaryTail,
  elementCountOf,
  jsonTooLarge,
  outputHead,
  responseHead,
  sharedMemoryTail,
  shortestJsonBytes,
  wantsBinary,
  type OutputFormat,
} from './infer-codec.js';
import { shapeMismatch, tensorDataToJson } from './tensor-json.js';

/** Answers with at least this many elements written as JSON are sent in slices; smaller ones whole. */
export const SLICED_ANSWER_MIN_ELEMENTS = 65536;

/** Elements formatted per slice: about 0.1-0.3 MB of text, a millisecond or two of formatting. */
export const SLICE_ELEMENTS = 16384;

/** How each output of a planned answer goes: its data as JSON, as binary after the header, or nothing (shm). */
interface PlannedOutput {
  readonly tensor: OutputTensor;
  readonly form: 'json' | 'binary' | 'shm';
  readonly count: number;
}

export interface JsonAnswerPlan {
  readonly response: InferenceResponse;
  readonly outputs: readonly PlannedOutput[];
  /** Any output goes as binary data (then the header's length must be known before it is sent). */
  readonly hasBinary: boolean;
  /** The binary parts, in output order. */
  readonly binary: readonly Buffer[];
}

/** Elements of `response` that would be written as JSON text (shared-memory and binary outputs not counted). */
export function jsonElementCount(response: InferenceResponse, format: OutputFormat): number {
  let n = 0;
  for (const t of response.outputs) {
    if (t.sharedMemory !== undefined || wantsBinary(t, format)) continue;
    if (t.datatype === 'FP16' || t.datatype === 'BF16') continue;
    n += elementCountOf(t);
  }
  return n;
}

/** Walks `count` length-prefixed elements from `offset`; the offset after them, or shapeMismatch. */
function skipBytesElements(name: string, data: Buffer, offset: number, count: number): number {
  let off = offset;
  for (let i = 0; i < count; i++) {
    if (off + 4 > data.length) shapeMismatch(name);
    off += 4 + data.readUInt32LE(off);
    if (off > data.length) shapeMismatch(name);
  }
  return off;
}

/** Whether every element of a BYTES output is UTF-8 (else it goes as binary); checked in slices between turns. */
async function bytesAreUtf8(t: OutputTensor, count: number, turn: () => Promise<void>): Promise<boolean> {
  const data = t.data;
  let off = 0;
  let utf8 = true;
  for (let i = 0; i < count; i++) {
    if (off + 4 > data.length) shapeMismatch(t.name);
    const len = data.readUInt32LE(off);
    off += 4;
    if (off + len > data.length) shapeMismatch(t.name);
    // After a non-UTF-8 element only the framing is checked: a shape mismatch is refused either way.
    if (utf8 && !isUtf8(data.subarray(off, off + len))) utf8 = false;
    off += len;
    if ((i + 1) % SLICE_ELEMENTS === 0) await turn();
  }
  if (off !== data.length) shapeMismatch(t.name);
  return utf8;
}

/**
 * Decides how each output goes and refuses what cannot be answered — before anything is written. `limit`
 * bounds the shortest text the answer could take (MAX_JSON_RESPONSE_BYTES: 400 past it). `turn` is awaited
 * between slices of the (per-element) BYTES check.
 */
export async function planJsonAnswer(
  response: InferenceResponse,
  format: OutputFormat,
  limit: number,
  turn: () => Promise<void>,
): Promise<JsonAnswerPlan> {
  const outputs: PlannedOutput[] = [];
  const binary: Buffer[] = [];
  let hasBinary = false;
  let shortest = responseHead(response).length;
  for (const t of response.outputs) {
    const count = elementCountOf(t);
    shortest += outputHead(t).length + 2;
    let form: PlannedOutput['form'];
    if (t.sharedMemory !== undefined) form = 'shm';
    else if (wantsBinary(t, format) || t.datatype === 'FP16' || t.datatype === 'BF16') form = 'binary';
    else if (t.datatype === 'BYTES') form = (await bytesAreUtf8(t, count, turn)) ? 'json' : 'binary';
    else {
      if (t.data.length !== count * byteSizeOf(t.datatype)) shapeMismatch(t.name);
      form = 'json';
    }
    if (form === 'json') {
      shortest += shortestJsonBytes(t, count);
      if (shortest > limit) throw jsonTooLarge(t.name, limit);
    } else if (form === 'binary') {
      hasBinary = true;
      if (t.data.length > 0) binary.push(t.data);
    }
    outputs.push({ tensor: t, form, count });
  }
  return { response, outputs, hasBinary, binary };
}

/** One slice of an output's elements as JSON array members (no brackets). */
function sliceJson(t: OutputTensor, data: Buffer, count: number): string {
  const text = tensorDataToJson(t.name, t.datatype, data, count);
  if (text === undefined) throw internal(`output '${t.name}' lost its JSON form while it was written`);
  return text.slice(1, -1);
}

/** An output's data array, a slice of elements at a time: `[`, members..., `]` in pieces. */
function* dataPieces(t: OutputTensor, count: number): Generator<string> {
  if (count === 0) {
    yield '[]';
    return;
  }
  const bytes = t.datatype === 'BYTES';
  const size = bytes ? 0 : byteSizeOf(t.datatype);
  let off = 0;
  for (let first = 0; first < count; first += SLICE_ELEMENTS) {
    const n = Math.min(SLICE_ELEMENTS, count - first);
    const end = bytes ? skipBytesElements(t.name, t.data, off, n) : off + n * size;
    const members = sliceJson(t, t.data.subarray(off, end), n);
    off = end;
    yield (first === 0 ? '[' : ',') + members + (first + n === count ? ']' : '');
  }
}

/**
 * The answer's JSON text in pieces, in order: joined they are exactly encodeInferResponse's `json` for the
 * same response and format. Each data piece holds at most SLICE_ELEMENTS elements.
 */
export function* jsonAnswerPieces(plan: JsonAnswerPlan): Generator<string> {
  let head = responseHead(plan.response);
  for (let i = 0; i < plan.outputs.length; i++) {
    const { tensor: t, form, count } = plan.outputs[i];
    if (i > 0) head += ',';
    head += outputHead(t);
    if (form === 'shm') {
      head += sharedMemoryTail(t.sharedMemory!);
      continue;
    }
    if (form === 'binary') {
      head += binaryTail(t.data.length);
      continue;
    }
    yield head + ',"data":';
    yield* dataPieces(t, count);
    head = '}';
  }
  yield head + ']}';
}
