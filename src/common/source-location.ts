/**
 * The `file.ts:123` of a log line, as Triton prints `file.cc:123`: the caller's place in the TypeScript
 * source. The running code is tsc's JavaScript, so the place V8 reports (a line of a `.js` file) is mapped
 * back through the `.js.map` tsc writes beside it (read once per file, on the first line logged from it).
 * Without a map the `.js` file's own name and line are printed, which are still a real place.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where a log call was made: the file's base name and a 1-based line. */
export interface SourceLocation {
  readonly file: string;
  readonly line: number;
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DIGIT = new Map([...BASE64].map((c, i) => [c, i]));

/** One generated line's first mapped segment: which source, which original line (0-based). */
interface LineMapping {
  readonly source: number;
  readonly line: number;
}

interface LoadedMap {
  readonly sources: readonly string[];
  /** Index = generated line (0-based); undefined where the line maps to nothing. */
  readonly lines: readonly (LineMapping | undefined)[];
}

/** Decodes the Base64 VLQ numbers of one segment of a source map's `mappings`. */
function decodeSegment(segment: string): number[] {
  const values: number[] = [];
  let value = 0;
  let shift = 0;
  for (const c of segment) {
    const digit = DIGIT.get(c);
    if (digit === undefined) return [];
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
    } else {
      values.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return values;
}

/** Source map v3 `mappings` → the original place of each generated line's first segment. */
export function lineMappings(mappings: string): (LineMapping | undefined)[] {
  const out: (LineMapping | undefined)[] = [];
  // Source index and original line are deltas across the whole map; the generated column restarts per line.
  let source = 0;
  let line = 0;
  for (const generatedLine of mappings.split(';')) {
    let first: LineMapping | undefined;
    for (const segment of generatedLine.split(',')) {
      if (segment === '') continue;
      const v = decodeSegment(segment);
      if (v.length < 4) continue;
      source += v[1];
      line += v[2];
      first ??= { source, line };
    }
    out.push(first);
  }
  return out;
}

const maps = new Map<string, LoadedMap | null>();

function loadMap(jsPath: string): LoadedMap | null {
  let map = maps.get(jsPath);
  if (map !== undefined) return map;
  map = null;
  try {
    const doc = JSON.parse(readFileSync(`${jsPath}.map`, 'utf8')) as {
      sources?: unknown;
      mappings?: unknown;
    };
    if (Array.isArray(doc.sources) && typeof doc.mappings === 'string') {
      map = {
        sources: doc.sources.map((s) => resolve(dirname(jsPath), String(s))),
        lines: lineMappings(doc.mappings),
      };
    }
  } catch {
    // No map, or not one we can read: the .js place is printed.
  }
  maps.set(jsPath, map);
  return map;
}

/** `at fn (file:///x/y.js:12:5)` or `at file:///x/y.js:12:5` → path and line. */
const FRAME = /\(?((?:file:\/\/)?[^\s()]+):(\d+):\d+\)?\s*$/;

/** Maps a place in running JavaScript to its TypeScript source where a source map says where. */
export function originalLocation(fileOrUrl: string, line: number): SourceLocation {
  const path = fileOrUrl.startsWith('file://') ? fileURLToPath(fileOrUrl) : fileOrUrl;
  const mapping = path.endsWith('.js') ? loadMap(path)?.lines[line - 1] : undefined;
  const sources = mapping && maps.get(path)?.sources;
  if (mapping && sources && sources[mapping.source] !== undefined) {
    return { file: basename(sources[mapping.source]), line: mapping.line + 1 };
  }
  return { file: basename(path), line };
}

/**
 * The place `fn`'s caller `skip` frames further down was called from: with skip 0 the frame just below
 * `fn` on the stack, with 1 the one below that. `unknown:0` when V8 gives none (native callers).
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export function callerLocation(fn: Function, skip = 0): SourceLocation {
  const holder: { stack?: string } = {};
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = skip + 1;
  Error.captureStackTrace(holder, fn);
  Error.stackTraceLimit = limit;
  const frame = holder.stack?.split('\n')[skip + 1];
  const m = frame === undefined ? null : FRAME.exec(frame);
  if (!m) return { file: 'unknown', line: 0 };
  return originalLocation(m[1], Number(m[2]));
}
