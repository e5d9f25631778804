/**
 * The gRPC client's message types, loaded once per process at run time with protobufjs from the
 * package's proto/ folder (grpc_service.proto and the model_config.proto it imports), with proto field
 * names kept (snake_case) so decoded messages read like Triton's JSON. Also the 64-bit conversions the
 * decoded messages need: protobufjs gives int64 as Long-like {low, high} objects (or numbers).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

export const SERVICE = 'inference.GRPCInferenceService';

/** A protobufjs 64-bit value as decoded (Long-like) or as a plain number. */
export interface LongLike {
  readonly low: number;
  readonly high: number;
  readonly unsigned?: boolean;
}

export type ProtoInt64 = number | LongLike;

let root: protobuf.Root | undefined;
const types = new Map<string, protobuf.Type>();

/** proto/ is at the package root: three levels above src/client/grpc, four above dist/src/client/grpc. */
function protoDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = path.join(dir, 'proto');
    if (existsSync(path.join(candidate, 'grpc_service.proto'))) return candidate;
    dir = path.dirname(dir);
  }
  throw new Error('nereid-server/client: cannot find proto/grpc_service.proto above the client module');
}

function loadRoot(): protobuf.Root {
  if (root) return root;
  const dir = protoDir();
  const r = new protobuf.Root();
  // Imports name files by bare name, relative to proto/.
  r.resolvePath = (_origin, target) => path.join(dir, path.basename(target));
  r.loadSync('grpc_service.proto', { keepCase: true });
  r.resolveAll();
  root = r;
  return r;
}

/** A message type of package `inference`, e.g. messageType('ModelInferRequest'). */
export function messageType(name: string): protobuf.Type {
  let t = types.get(name);
  if (t === undefined) {
    t = loadRoot().lookupType(`inference.${name}`);
    types.set(name, t);
  }
  return t;
}

/**
 * Encodes a plain object (proto field names; int64 as number or LongLike; bytes as Uint8Array). protobufjs
 * encodes into a Uint8Array that is a Buffer under Node; grpc-js wants a Buffer.
 */
export function encodeMessage(type: protobuf.Type, value: object): Buffer {
  const bytes = type.encode(value).finish();
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A signed or unsigned 64-bit value as protobufjs writes it (from the low and high words). */
export function longOf(v: bigint, unsigned: boolean): LongLike {
  const u = BigInt.asUintN(64, v);
  return { low: Number(u & 0xffffffffn) | 0, high: Number(u >> 32n) | 0, unsigned };
}

export function bigintOf(v: ProtoInt64 | string): bigint {
  if (typeof v === 'number') return BigInt(v);
  if (typeof v === 'string') return BigInt(v);
  const u = (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
  return v.unsigned ? u : BigInt.asIntN(64, u);
}

/** A 64-bit value as a number when it is exactly representable, else as a bigint. */
export function numberOrBigint(v: ProtoInt64 | string): number | bigint {
  const b = bigintOf(v);
  const n = Number(b);
  return Number.isSafeInteger(n) ? n : b;
}

/** A 64-bit count as a number (counters and sizes stay below 2^53 in practice; larger ones are rounded). */
export function numberOf(v: ProtoInt64 | string | undefined): number {
  if (v === undefined) return 0;
  if (typeof v === 'number') return v;
  return Number(bigintOf(v));
}
