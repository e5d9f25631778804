/**
 * protobufjs codecs for the cold rpcs (health, metadata, config, statistics, repository, shared memory,
 * trace and log settings), built from the .proto files in proto/ with proto field names kept, so the
 * objects handlers build read like Triton's JSON. ModelConfigResponse is encoded straight from the core's
 * config JSON (Triton's JSON uses the proto's field and enum names, as Triton's own JsonStringToMessage
 * relies on). The hot inference messages use the hand-written codecs instead.
 */
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { invalidArg } from '../../common/errors.js';

/** proto/ in the package (this file runs from dist/src/frontends/grpc/). */
export const PROTO_DIR = fileURLToPath(new URL('../../../../proto/', import.meta.url));
export const PROTO_FILES = ['grpc_service.proto', 'health.proto'] as const;

let root: protobuf.Root | undefined;

/** The protocol's message types (loaded once). */
export function protoRoot(): protobuf.Root {
  if (root === undefined) {
    const r = new protobuf.Root();
    r.resolvePath = (_origin, target) => (target.startsWith('/') ? target : PROTO_DIR + target);
    r.loadSync([...PROTO_FILES], { keepCase: true });
    r.resolveAll();
    root = r;
  }
  return root;
}

/** A decoded message as plain data: 64-bit integers as decimal strings, enums by name, bytes as Buffers. */
export type Plain = Record<string, unknown>;

const TO_OBJECT: protobuf.IConversionOptions = {
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

export interface MessageCodec {
  decode(data: Buffer): Plain;
  encode(value: object): Uint8Array;
}

const codecs = new Map<string, MessageCodec>();

/** The codec of a message type by full name, e.g. `inference.ModelReadyRequest`. */
export function codec(typeName: string): MessageCodec {
  let c = codecs.get(typeName);
  if (c === undefined) {
    const type = protoRoot().lookupType(typeName);
    c = {
      decode: (data) => {
        let message: protobuf.Message;
        try {
          message = type.decode(data);
        } catch (err) {
          throw invalidArg(`malformed protobuf message: ${(err as Error).message}`);
        }
        return type.toObject(message, TO_OBJECT);
      },
      encode: (value) => type.encode(type.fromObject(value)).finish(),
    };
    codecs.set(typeName, c);
  }
  return c;
}
