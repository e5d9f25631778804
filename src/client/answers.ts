/**
 * The answers of the non-inference APIs, checked and normalised into the shapes of types.ts. Both
 * clients funnel what they received through here (HTTP: parsed JSON; gRPC: decoded messages with
 * snake_case names and 64-bit numbers already converted), so both return the same objects.
 */
import { isDataType } from '../common/datatype.js';
import { malformed } from './request.js';
import type {
  LoadModelOptions,
  ModelMetadata,
  ModelStatistics,
  RepositoryIndexEntry,
  ServerMetadata,
  TensorMetadata,
} from './types.js';

type Obj = Record<string, unknown>;

function object(v: unknown, what: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw malformed(`${what} is not an object`);
  return v as Obj;
}

function str(o: Obj, key: string, what: string, fallback?: string): string {
  const v = o[key];
  if (typeof v === 'string') return v;
  if (v === undefined && fallback !== undefined) return fallback;
  throw malformed(`${what}: '${key}' is not a string`);
}

function strings(o: Obj, key: string, what: string): string[] {
  const v = o[key] ?? [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
    throw malformed(`${what}: '${key}' is not a list of strings`);
  return v;
}

function tensors(o: Obj, key: string, what: string): TensorMetadata[] {
  const v = o[key] ?? [];
  if (!Array.isArray(v)) throw malformed(`${what}: '${key}' is not a list`);
  return v.map((t: unknown) => {
    const x = object(t, `${what}: an entry of '${key}'`);
    const name = str(x, 'name', what);
    const datatype = x.datatype;
    if (typeof datatype !== 'string' || !isDataType(datatype))
      throw malformed(`${what}: tensor '${name}' has an unknown datatype`);
    const shape = x.shape ?? [];
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d)))
      throw malformed(`${what}: tensor '${name}' has an invalid shape`);
    return { name, datatype, shape: shape as number[] };
  });
}

export function serverMetadata(doc: unknown): ServerMetadata {
  const o = object(doc, 'server metadata');
  return {
    name: str(o, 'name', 'server metadata'),
    version: str(o, 'version', 'server metadata', ''),
    extensions: strings(o, 'extensions', 'server metadata'),
  };
}

export function modelMetadata(doc: unknown): ModelMetadata {
  const o = object(doc, 'model metadata');
  return {
    name: str(o, 'name', 'model metadata'),
    versions: strings(o, 'versions', 'model metadata'),
    platform: str(o, 'platform', 'model metadata', ''),
    inputs: tensors(o, 'inputs', 'model metadata'),
    outputs: tensors(o, 'outputs', 'model metadata'),
  };
}

export function statistics(doc: unknown): ModelStatistics[] {
  const stats = object(doc, 'model statistics').model_stats ?? [];
  if (!Array.isArray(stats)) throw malformed("model statistics: 'model_stats' is not a list");
  for (const s of stats) object(s, 'model statistics entry');
  return stats as ModelStatistics[];
}

export function indexEntries(doc: unknown): RepositoryIndexEntry[] {
  if (!Array.isArray(doc)) throw malformed('the repository index is not a list');
  return doc.map((e: unknown) => {
    const o = object(e, 'repository index entry');
    const entry: RepositoryIndexEntry = {
      name: str(o, 'name', 'repository index entry'),
      state: str(o, 'state', 'repository index entry', ''),
      reason: str(o, 'reason', 'repository index entry', ''),
    };
    const version = str(o, 'version', 'repository index entry', '');
    return version === '' ? entry : { name: entry.name, version, state: entry.state, reason: entry.reason };
  });
}

/**
 * The parameters of a load request: `config` as JSON text, and each override file as `file:<path>`
 * (HTTP sends file contents base64-encoded, gRPC as bytes; `encode` decides).
 */
export function loadParameters<B>(
  options: LoadModelOptions,
  encode: (bytes: Uint8Array) => B,
): Record<string, string | B> {
  const out: Record<string, string | B> = {};
  if (options.config !== undefined) {
    out.config = typeof options.config === 'string' ? options.config : JSON.stringify(options.config);
  }
  for (const [path, content] of Object.entries(options.files ?? {})) {
    const key = path.startsWith('file:') ? path : `file:${path}`;
    out[key] = encode(typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
  }
  return out;
}
