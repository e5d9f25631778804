/**
 * proto3 value rules shared by the text-format parser and the JSON reader: the in-memory shape of a
 * message (a plain object keyed by proto field names), its proto3 defaults, integer range checks and the
 * "set a field once" bookkeeping, so both readers accept and reject exactly the same things.
 */
import { enumDescriptor, type FieldDescriptor, type MessageDescriptor, type ScalarType } from './schema.js';

/** A parsed field value: scalars, enum names, nested messages, lists, and maps (string-keyed records). */
export type ProtoValue = string | number | boolean | ProtoMessage | ProtoValue[];
export interface ProtoMessage {
  [field: string]: ProtoValue;
}

const INT_RANGES: Record<'int32' | 'uint32' | 'int64' | 'uint64', readonly [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export function isIntegerType(t: string): t is 'int32' | 'uint32' | 'int64' | 'uint64' {
  return t === 'int32' || t === 'uint32' || t === 'int64' || t === 'uint64';
}

/**
 * Range-checks an integer for a field type. Returns the number, or an error phrase (the caller adds
 * where). 64-bit values are held as JS numbers, so magnitudes beyond 2^53 are refused rather than rounded.
 */
export function checkInteger(type: 'int32' | 'uint32' | 'int64' | 'uint64', value: bigint): number | string {
  const [lo, hi] = INT_RANGES[type];
  if (value < lo || value > hi) return `value ${value} is out of range for ${type}`;
  if (value > MAX_SAFE || value < -MAX_SAFE) {
    return `value ${value} is beyond 2^53 and cannot be represented exactly (${type} values must be within ±${Number.MAX_SAFE_INTEGER})`;
  }
  return Number(value);
}

/** proto3 default of a scalar or enum (an enum's default is its value numbered 0). */
export function scalarDefault(type: ScalarType | 'enum', enumName?: string): string | number | boolean {
  switch (type) {
    case 'string':
      return '';
    case 'bool':
      return false;
    case 'enum':
      return enumDescriptor(enumName ?? '').values.find((v) => v.number === 0)?.name ?? '';
    default:
      return 0;
  }
}

/** The value an unset field reads as in proto3; undefined for messages and oneof members (no value). */
export function fieldDefault(field: FieldDescriptor): ProtoValue | undefined {
  if (field.label === 'repeated') return [];
  if (field.label === 'map') return {};
  if (field.oneof !== undefined || field.type === 'message') return undefined;
  return scalarDefault(field.type, field.typeName);
}

/** A message with every scalar, list and map field at its proto3 default and no sub-message set. */
export function newMessage(desc: MessageDescriptor): ProtoMessage {
  const msg: ProtoMessage = {};
  for (const f of desc.fields) {
    const d = fieldDefault(f);
    if (d !== undefined) msg[f.name] = d;
  }
  return msg;
}

/**
 * Tracks which singular fields and oneof members of one message instance were already given, so a
 * second `name:` or a second member of a oneof is reported instead of silently overwriting.
 */
export class FieldTracker {
  private readonly seen = new Set<string>();
  private readonly oneofs = new Map<string, string>();
  constructor(private readonly desc: MessageDescriptor) {}

  /** Returns an error phrase when the field may not be set again, else records it. */
  claim(field: FieldDescriptor): string | undefined {
    if (field.label !== 'singular') return undefined;
    if (this.seen.has(field.name)) {
      return `non-repeated field '${field.name}' is specified multiple times in message ${this.desc.name}`;
    }
    if (field.oneof !== undefined) {
      const other = this.oneofs.get(field.oneof);
      if (other !== undefined) {
        return `field '${field.name}' is specified along with field '${other}', another member of oneof '${field.oneof}' in message ${this.desc.name}`;
      }
      this.oneofs.set(field.oneof, field.name);
    }
    this.seen.add(field.name);
    return undefined;
  }
}

/** Decimal text of a map key as JSON and our records hold it. */
export function mapKeyText(v: string | number | boolean): string {
  return typeof v === 'string' ? v : String(v);
}

/**
 * Adds a map entry as an own property even for keys like `__proto__`, which plain assignment would
 * turn into a prototype change (map keys come from untrusted files and requests).
 */
export function setEntry<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
