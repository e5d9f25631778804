/**
 * The task a JSON worker thread runs (json-pool.ts starts these threads through Piscina): decode one large
 * request body off the event loop. `infer` and `generate` run the HTTP decoders themselves (so tensors come
 * back as bytes, not as millions of JS numbers to clone), `json` parses any other JSON body. The body comes in
 * moved or shared and goes back the same way; tensors decoded from JSON move back. A NereidError is
 * returned as data: an Error crossing threads would lose its code.
 */
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { invalidArg, NereidError, type ErrorCode } from '../../common/errors.js';
import type { ModelMetadata } from '../../core/index.js';
import { parseGenerateRequest, type GenerateRequestParts } from './generate-codec.js';
import { decodeInferRequest, type DecodeOptions, type DecodedInferRequest } from './infer-codec.js';
import { parseJson, type JsonIn } from './json.js';

interface TaskBase {
  readonly body: Uint8Array;
  /** Refuse a document whose parse could need more heap than this (parseHeapBound). */
  readonly maxParseHeap: number;
}

export type JsonTask =
  | (TaskBase & {
      readonly kind: 'infer';
      readonly headerLength: number | undefined;
      readonly options: DecodeOptions;
    })
  | (TaskBase & { readonly kind: 'json' })
  | (TaskBase & {
      readonly kind: 'generate';
      readonly metadata: ModelMetadata;
      readonly maxInputSize: number;
    });

export type JsonTaskResult =
  | {
      readonly ok: true;
      readonly kind: 'infer';
      readonly decoded: DecodedInferRequest;
      readonly body: Uint8Array;
    }
  | { readonly ok: true; readonly kind: 'json'; readonly value: JsonIn }
  | { readonly ok: true; readonly kind: 'generate'; readonly parts: GenerateRequestParts }
  | { readonly ok: false; readonly code: ErrorCode; readonly message: string };

/**
 * How deep a parsed JSON body (`json` tasks) comes back. Structured clone recurses, so a hostile document
 * nested 250,000 deep cannot cross threads as it is; no endpoint reads anywhere near this deep (they read
 * members at depth 1-3 and check their types), so a container deeper than this comes back empty, of the
 * same kind, and the endpoint's own checks answer as they would have.
 */
export const CLONED_JSON_DEPTH = 64;

function pruned(value: JsonIn, depth: number): JsonIn {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    if (depth >= CLONED_JSON_DEPTH) return value.length === 0 ? value : [];
    for (let i = 0; i < value.length; i++) value[i] = pruned(value[i], depth + 1);
    return value;
  }
  if (depth >= CLONED_JSON_DEPTH) return {};
  for (const key of Object.keys(value)) value[key] = pruned(value[key], depth + 1);
  return value;
}

const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;

/**
 * An upper bound on the JS heap JSON.parse may need for `json`: 12 bytes per byte of text (the cheapest
 * element, `0,`, costs about 16 bytes of heap while the parser builds its array, and 8 after) plus 80 per
 * array or object (a nested `[0],` costs about 65). Measured on V8 11 (Node 20): 64 MB of `0,` took 260 MB
 * of heap (500 MB RSS), 32 MB of `[0],` 520 MB.
 *
 * Why check at all when the worker's heap is capped: JSON.parse is one C++ builtin that does not stop for
 * the worker's termination, so a document that crosses the cap inside it aborts the whole process
 * ("Reached heap limit"), not just the worker. The bound refuses such a document before it is parsed.
 */
export function parseHeapBound(json: Uint8Array): number {
  const buf = Buffer.isBuffer(json) ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  let containers = 0;
  for (const c of [OPEN_BRACKET, OPEN_BRACE]) {
    for (let i = buf.indexOf(c); i !== -1; i = buf.indexOf(c, i + 1)) containers++;
  }
  return 12 * buf.length + 80 * containers;
}

function checkParseHeap(json: Buffer, maxParseHeap: number): void {
  const bound = parseHeapBound(json);
  if (bound > maxParseHeap) {
    throw invalidArg(
      `request JSON of ${json.length} bytes could need up to ${Math.ceil(bound / 2 ** 20)} MB of memory to parse ` +
        `(it holds many arrays or objects), more than the ${Math.floor(maxParseHeap / 2 ** 20)} MB allowed ` +
        '(16 × --http-max-json-size); send tensors as binary data',
    );
  }
}

/** An ArrayBuffer this view covers alone, which can therefore move instead of being copied. */
function movable(view: Uint8Array): ArrayBuffer | undefined {
  const buffer = view.buffer;
  if (!(buffer instanceof ArrayBuffer)) return undefined; // shared: travels without a copy anyway
  return view.byteOffset === 0 && view.byteLength === buffer.byteLength ? buffer : undefined;
}

function asBuffer(view: Uint8Array): Buffer {
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
}

export default function runJsonTask(task: JsonTask): unknown {
  const body = asBuffer(task.body);
  try {
    const jsonLength = task.kind === 'infer' ? (task.headerLength ?? body.length) : body.length;
    checkParseHeap(body.subarray(0, jsonLength), task.maxParseHeap);
    if (task.kind === 'json') return { ok: true, kind: 'json', value: pruned(parseJson(body), 0) };
    let result: JsonTaskResult;
    let inputs: readonly { readonly data: Uint8Array }[];
    if (task.kind === 'generate') {
      const parts = parseGenerateRequest(body.toString('utf8'), task.metadata, task.maxInputSize);
      result = { ok: true, kind: 'generate', parts };
      inputs = parts.inputs;
    } else {
      const decoded = decodeInferRequest(body, task.headerLength, task.options);
      result = { ok: true, kind: 'infer', decoded, body: task.body };
      inputs = decoded.request.inputs;
    }
    // Binary inputs are views into the body and come back with it; inputs decoded from JSON data are
    // new buffers of their own and move.
    const transfer = new Set<ArrayBuffer>();
    const own = movable(task.body);
    if (own !== undefined && task.kind === 'infer') transfer.add(own);
    for (const input of inputs) {
      const buffer = movable(input.data);
      if (buffer !== undefined) transfer.add(buffer);
    }
    return move({
      get [transferableSymbol]() {
        return [...transfer];
      },
      get [valueSymbol]() {
        return result;
      },
    });
  } catch (err) {
    if (err instanceof NereidError) return { ok: false, code: err.code, message: err.message };
    throw err;
  }
}
