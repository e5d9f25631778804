/**
 * `InferTensorContents` (typed tensor data) → the tensor's raw little-endian bytes, as Triton's
 * InferGRPCToInput does it: the one non-empty list must match the input's datatype (INT8/INT16 take the low
 * bytes of int_contents, UINT8/UINT16 of uint_contents, BYTES elements are length-prefixed), with Triton's
 * error texts. Packed fp32/fp64 lists already are the tensor's bytes, so a single packed run is returned as
 * a view without a copy; everything else is converted into one new Buffer.
 */
import { byteSizeOf, type DataType } from '../../common/datatype.js';
import { invalidArg } from '../../common/errors.js';
import { ProtoReader, WIRE_FIXED32, WIRE_FIXED64, WIRE_LEN, WIRE_VARINT, malformed } from './wire.js';

const BOOL = 1;
const INT = 2;
const INT64 = 3;
const UINT = 4;
const UINT64 = 5;
const FP32 = 6;
const FP64 = 7;
const BYTES = 8;

/** Wire type of one element of each list (bytes: length-delimited). */
const ELEMENT_WIRE: readonly number[] = [
  -1,
  WIRE_VARINT,
  WIRE_VARINT,
  WIRE_VARINT,
  WIRE_VARINT,
  WIRE_VARINT,
  WIRE_FIXED32,
  WIRE_FIXED64,
  WIRE_LEN,
];

/** The datatype a list stands for, given the input's declared datatype. */
function listType(field: number, declared: DataType): DataType {
  switch (field) {
    case BOOL:
      return 'BOOL';
    case INT:
      return declared === 'INT8' || declared === 'INT16' ? declared : 'INT32';
    case INT64:
      return 'INT64';
    case UINT:
      return declared === 'UINT8' || declared === 'UINT16' ? declared : 'UINT32';
    case UINT64:
      return 'UINT64';
    case FP32:
      return 'FP32';
    case FP64:
      return 'FP64';
    default:
      return 'BYTES';
  }
}

interface Census {
  /** Elements per list (index = field number). */
  readonly count: number[];
  /** BYTES: total payload bytes. */
  bytesTotal: number;
  /** fp32/fp64: the single packed run when the list is exactly one, else undefined. */
  readonly packedRuns: (Buffer | undefined)[];
  readonly runCount: number[];
}

function countVarints(buf: Buffer, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) if (buf[i] < 0x80) n++;
  if (end > start && buf[end - 1] >= 0x80) throw malformed('truncated packed varint list');
  return n;
}

/** First pass: how many elements each list holds (validating the framing). */
function census(views: readonly Buffer[]): Census {
  const c: Census = {
    count: new Array<number>(9).fill(0),
    bytesTotal: 0,
    packedRuns: new Array<Buffer | undefined>(9).fill(undefined),
    runCount: new Array<number>(9).fill(0),
  };
  for (const view of views) {
    const r = new ProtoReader(view);
    while (r.more()) {
      const tag = r.tag();
      const field = tag >>> 3;
      const wt = tag & 7;
      if (field < 1 || field > 8) {
        r.skip(wt);
        continue;
      }
      const elementWire = ELEMENT_WIRE[field];
      if (field === BYTES) {
        if (wt !== WIRE_LEN) throw malformed('bytes_contents with a wrong wire type');
        const n = r.length();
        r.pos += n;
        c.bytesTotal += 4 + n;
        c.count[field]++;
      } else if (wt === WIRE_LEN) {
        const run = r.bytes();
        c.runCount[field]++;
        c.packedRuns[field] = run;
        if (elementWire === WIRE_VARINT) c.count[field] += countVarints(run, 0, run.length);
        else {
          const width = elementWire === WIRE_FIXED32 ? 4 : 8;
          if (run.length % width !== 0) throw malformed('packed fixed-width list with a partial element');
          c.count[field] += run.length / width;
        }
      } else if (wt === elementWire) {
        r.skip(wt);
        c.runCount[field] += 2; // unpacked: never a single view
        c.count[field]++;
      } else {
        throw malformed(`contents field ${field} with wire type ${wt}`);
      }
    }
  }
  return c;
}

/**
 * Converts the (merged) contents sub-messages of one input to its raw bytes, or throws Triton's error.
 * `views` are the bodies of every `contents` occurrence (protobuf merges repeated occurrences).
 */
export function contentsToRaw(
  views: readonly Buffer[],
  datatype: DataType,
  input: string,
  model: string,
): Buffer {
  const c = census(views);
  let source = 0;
  for (let field = BOOL; field <= BYTES; field++) {
    if (c.count[field] === 0) continue;
    if (source !== 0) {
      throw invalidArg(
        `unexpected explicit tensor data for input tensor '${input}' for model '${model}', binary data was already supplied.`,
      );
    }
    const t = listType(field, datatype);
    if (t !== datatype) {
      throw invalidArg(
        `unexpected explicit tensor data for input tensor '${input}' for model '${model}' of type '${t}', expected datatype '${datatype}'`,
      );
    }
    source = field;
  }
  if (source === 0) return Buffer.alloc(0);
  if ((source === FP32 || source === FP64) && c.runCount[source] === 1) return c.packedRuns[source]!;

  const n = c.count[source];
  const out = Buffer.allocUnsafe(source === BYTES ? c.bytesTotal : n * byteSizeOf(datatype));
  let o = 0;
  for (const view of views) {
    const r = new ProtoReader(view);
    while (r.more()) {
      const tag = r.tag();
      const field = tag >>> 3;
      const wt = tag & 7;
      if (field !== source) {
        r.skip(wt);
        continue;
      }
      if (source === BYTES) {
        const b = r.bytes();
        out.writeUInt32LE(b.length, o);
        out.set(b, o + 4);
        o += 4 + b.length;
      } else if (wt === WIRE_LEN) {
        const outer = r.enter();
        while (r.more()) o = writeElement(r, source, datatype, out, o);
        r.leave(outer);
      } else {
        o = writeElement(r, source, datatype, out, o);
      }
    }
  }
  return out;
}

/** Reads one element of list `field` and writes it as `datatype` at `o`; returns the next offset. */
function writeElement(r: ProtoReader, field: number, datatype: DataType, out: Buffer, o: number): number {
  switch (field) {
    case FP32:
      r.need(4);
      out.writeUInt32LE(r.buf.readUInt32LE(r.pos), o);
      r.pos += 4;
      return o + 4;
    case FP64:
      r.need(8);
      r.buf.copy(out, o, r.pos, r.pos + 8);
      r.pos += 8;
      return o + 8;
    default: {
      r.varint64();
      switch (datatype) {
        case 'BOOL':
          out[o] = r.lo !== 0 || r.hi !== 0 ? 1 : 0;
          return o + 1;
        case 'INT8':
        case 'UINT8':
          out[o] = r.lo & 0xff;
          return o + 1;
        case 'INT16':
        case 'UINT16':
          out.writeUInt16LE(r.lo & 0xffff, o);
          return o + 2;
        case 'INT32':
        case 'UINT32':
          out.writeUInt32LE(r.lo, o);
          return o + 4;
        default:
          out.writeUInt32LE(r.lo, o);
          out.writeUInt32LE(r.hi, o + 4);
          return o + 8;
      }
    }
  }
}
