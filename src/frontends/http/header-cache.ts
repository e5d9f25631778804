/**
 * The parsed JSON of recent inference request headers, found again by their exact bytes.
 *
 * A client sends the same JSON header with every request of its loop (same inputs, shapes and outputs; the
 * tensors follow it as binary data), so the UTF-8 decode and the JSON parse of that header, about a tenth
 * of the HTTP frontend's CPU for a small request, can be skipped: byte-for-byte equal headers parse to
 * equal documents. The decoder only reads a document (it copies the shapes it keeps, and parameter values
 * are primitives), so one parsed document serves every request with those bytes.
 *
 * Bounded: only small headers, in a few slots reused round-robin; a lookup is a length compare per slot and
 * a memcmp on a length match, so a client whose headers always differ (a request id in each) pays little.
 */
import type { JsonIn } from './json.js';

/** Headers longer than this are parsed every time (a large header carries data, not a reused shape). */
export const HEADER_CACHE_MAX_BYTES = 2048;
const SLOTS = 8;

export class HeaderCache {
  private readonly bytes: (Buffer | undefined)[] = new Array<Buffer | undefined>(SLOTS).fill(undefined);
  private readonly docs: JsonIn[] = new Array<JsonIn>(SLOTS).fill(null);
  private next = 0;

  /** The document parsed from a header with exactly these bytes, if one is remembered. */
  get(json: Uint8Array): JsonIn | undefined {
    const n = json.length;
    if (n > HEADER_CACHE_MAX_BYTES) return undefined;
    for (let i = 0; i < SLOTS; i++) {
      const b = this.bytes[i];
      if (b !== undefined && b.length === n && b.equals(json)) return this.docs[i];
    }
    return undefined;
  }

  /** Remembers `doc` as the parse of `json` (copied: the request body's buffer may be reused). */
  set(json: Uint8Array, doc: JsonIn): void {
    if (json.length > HEADER_CACHE_MAX_BYTES) return;
    const slot = this.next;
    this.next = (slot + 1) % SLOTS;
    this.bytes[slot] = Buffer.from(json);
    this.docs[slot] = doc;
  }
}
