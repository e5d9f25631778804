/**
 * A bare @grpc/grpc-js server for `inference.GRPCInferenceService` (proto/grpc_service.proto) whose
 * ModelInfer echoes every input tensor back as an output (INPUT0 -> OUTPUT0, same datatype, shape and raw
 * bytes): the ceiling of a gRPC server in this runtime for bench/transport, driven by perf_analyzer just
 * like Nereid. The metadata, config, readiness and statistics rpcs perf_analyzer calls go through
 * protobufjs; every other rpc is UNIMPLEMENTED.
 *
 * ModelInfer's codec is chosen with --codec:
 *   raw (default)  grpc-js hands the message over as bytes; a minimal protobuf scan takes the inputs'
 *                  names, datatypes, shapes and raw contents, and the response is written by hand into one
 *                  buffer. This is the cheapest correct answer grpc-js allows, hence the ceiling.
 *   protobufjs     a full protobufjs decode and encode, as a typical grpc-js service would do.
 *
 * Usage: node dist/bench/transport/grpc-echo.js [--port N] [--codec raw|protobufjs] [--default-windows]
 *        (prints "grpc-echo listening on <port>")
 */
import * as grpc from '@grpc/grpc-js';
import { existsSync } from 'node:fs';
import http2 from 'node:http2';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import {
  ECHO_MODEL,
  EchoCounters,
  modelConfig,
  modelMetadata,
  outputName,
  portArgument,
} from './echo-model.js';

const SERVICE = 'inference.GRPCInferenceService';
const counters = new EchoCounters();

function protoDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = path.join(dir, 'proto');
    if (existsSync(path.join(candidate, 'grpc_service.proto'))) return candidate;
    dir = path.dirname(dir);
  }
  throw new Error('cannot find proto/grpc_service.proto');
}

const root = new protobuf.Root();
const dir = protoDir();
root.resolvePath = (_origin, target) => path.join(dir, path.basename(target));
root.loadSync('grpc_service.proto', { keepCase: true });
root.resolveAll();
const type = (name: string): protobuf.Type => root.lookupType(`inference.${name}`);

// --- the minimal ModelInfer codec -------------------------------------------------------------------------

class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }
  varint(): number {
    let result = 0;
    let shift = 1;
    for (;;) {
      if (this.pos >= this.end) throw new Error('truncated varint');
      const b = this.buf[this.pos++];
      result += (b & 0x7f) * shift;
      if (b < 0x80) return result;
      shift *= 128;
      if (shift > 2 ** 63) throw new Error('varint too long');
    }
  }
  /** The next length-delimited field's bytes, as a view. */
  bytes(): Buffer {
    const n = this.varint();
    if (this.pos + n > this.end) throw new Error('truncated field');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

interface RawInput {
  name: Buffer;
  datatype: Buffer;
  shape: number[];
}

function readInput(field: Buffer): RawInput {
  const r = new Reader(field);
  const input: RawInput = { name: Buffer.alloc(0), datatype: Buffer.alloc(0), shape: [] };
  while (r.pos < r.end) {
    const tag = r.varint();
    const no = Math.floor(tag / 8);
    const wire = tag & 7;
    if (no === 1 && wire === 2) input.name = r.bytes();
    else if (no === 2 && wire === 2) input.datatype = r.bytes();
    else if (no === 3 && wire === 2) {
      const packed = new Reader(r.bytes());
      while (packed.pos < packed.end) input.shape.push(packed.varint());
    } else if (no === 3 && wire === 0) input.shape.push(r.varint());
    else r.skip(wire);
  }
  return input;
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

class Writer {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  varint(n: number): void {
    while (n >= 128) {
      this.buf[this.pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }
  field(no: number, bytes: Buffer): void {
    this.varint(no * 8 + 2);
    this.varint(bytes.length);
    bytes.copy(this.buf, this.pos);
    this.pos += bytes.length;
  }
}

const lengthField = (no: number, n: number): number => varintSize(no * 8 + 2) + varintSize(n) + n;

/** ModelInferRequest bytes -> ModelInferResponse bytes with every input echoed. */
function echoRaw(request: Buffer): { response: Buffer; batch: number } {
  const r = new Reader(request);
  let model: Buffer = Buffer.alloc(0);
  let id: Buffer = Buffer.alloc(0);
  const inputs: RawInput[] = [];
  const raws: Buffer[] = [];
  while (r.pos < r.end) {
    const tag = r.varint();
    const no = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire !== 2) r.skip(wire);
    else if (no === 1) model = r.bytes();
    else if (no === 3) id = r.bytes();
    else if (no === 5) inputs.push(readInput(r.bytes()));
    else if (no === 7) raws.push(r.bytes());
    else r.bytes();
  }
  const outputs = inputs.map((input) => {
    const name = Buffer.from(outputName(input.name.toString('utf8')));
    let shapeBytes = 0;
    for (const d of input.shape) shapeBytes += varintSize(d);
    const size =
      lengthField(1, name.length) +
      lengthField(2, input.datatype.length) +
      (input.shape.length > 0 ? lengthField(3, shapeBytes) : 0);
    return { name, input, shapeBytes, size };
  });
  let total =
    lengthField(1, model.length) + lengthField(2, 1) + (id.length > 0 ? lengthField(3, id.length) : 0);
  for (const o of outputs) total += lengthField(5, o.size);
  for (const raw of raws) total += lengthField(6, raw.length);
  const w = new Writer(Buffer.allocUnsafe(total));
  w.field(1, model);
  w.field(2, Buffer.from('1'));
  if (id.length > 0) w.field(3, id);
  for (const o of outputs) {
    w.varint(5 * 8 + 2);
    w.varint(o.size);
    w.field(1, o.name);
    w.field(2, o.input.datatype);
    if (o.input.shape.length > 0) {
      w.varint(3 * 8 + 2);
      w.varint(o.shapeBytes);
      for (const d of o.input.shape) w.varint(d);
    }
  }
  for (const raw of raws) w.field(6, raw);
  return { response: w.buf, batch: inputs[0]?.shape[0] ?? 1 };
}

// --- the same through protobufjs --------------------------------------------------------------------------

interface DecodedInput {
  name: string;
  datatype: string;
  shape: (number | protobuf.Long)[];
}

function echoProtobufjs(request: Buffer): { response: Buffer; batch: number } {
  const req = type('ModelInferRequest').decode(request) as unknown as {
    model_name: string;
    id: string;
    inputs: DecodedInput[];
    raw_input_contents: Uint8Array[];
  };
  const ResponseType = type('ModelInferResponse');
  const message = ResponseType.fromObject({
    model_name: req.model_name,
    model_version: '1',
    id: req.id,
    outputs: req.inputs.map((i) => ({ name: outputName(i.name), datatype: i.datatype, shape: i.shape })),
    raw_output_contents: req.raw_input_contents,
  });
  const first = req.inputs[0]?.shape[0];
  return { response: Buffer.from(ResponseType.encode(message).finish()), batch: Number(first ?? 1) };
}

// --- the service ------------------------------------------------------------------------------------------

type Unary = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => void;

function method(
  name: string,
  requestType: string,
  responseType: string,
): grpc.MethodDefinition<unknown, unknown> {
  const Req = type(requestType);
  const Res = type(responseType);
  return {
    path: `/${SERVICE}/${name}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: (v: unknown) => Buffer.from(Req.encode(Req.fromObject(v as object)).finish()),
    requestDeserialize: (b: Buffer) => Req.toObject(Req.decode(b), { longs: Number }),
    responseSerialize: (v: unknown) => Buffer.from(Res.encode(Res.fromObject(v as object)).finish()),
    responseDeserialize: (b: Buffer) => Res.toObject(Res.decode(b), { longs: Number }),
  };
}

const codecIndex = process.argv.indexOf('--codec');
const codec = codecIndex >= 0 ? process.argv[codecIndex + 1] : 'raw';
if (codec !== 'raw' && codec !== 'protobufjs')
  throw new Error(`--codec must be raw or protobufjs, not ${codec}`);
const echo = codec === 'raw' ? echoRaw : echoProtobufjs;

const bytesIdentity = (b: Buffer): Buffer => b;
const definition: grpc.ServiceDefinition = {
  ServerLive: method('ServerLive', 'ServerLiveRequest', 'ServerLiveResponse'),
  ServerReady: method('ServerReady', 'ServerReadyRequest', 'ServerReadyResponse'),
  ModelReady: method('ModelReady', 'ModelReadyRequest', 'ModelReadyResponse'),
  ServerMetadata: method('ServerMetadata', 'ServerMetadataRequest', 'ServerMetadataResponse'),
  ModelMetadata: method('ModelMetadata', 'ModelMetadataRequest', 'ModelMetadataResponse'),
  ModelConfig: method('ModelConfig', 'ModelConfigRequest', 'ModelConfigResponse'),
  ModelStatistics: method('ModelStatistics', 'ModelStatisticsRequest', 'ModelStatisticsResponse'),
  ModelInfer: {
    path: `/${SERVICE}/ModelInfer`,
    requestStream: false,
    responseStream: false,
    requestSerialize: bytesIdentity,
    requestDeserialize: bytesIdentity,
    responseSerialize: bytesIdentity,
    responseDeserialize: bytesIdentity,
  },
};

const nameOf = (call: grpc.ServerUnaryCall<unknown, unknown>): string =>
  (call.request as { name: string }).name;

const handlers: Record<string, Unary> = {
  ServerLive: (_call, cb) => cb(null, { live: true }),
  ServerReady: (_call, cb) => cb(null, { ready: true }),
  ModelReady: (_call, cb) => cb(null, { ready: true }),
  ServerMetadata: (_call, cb) => cb(null, { name: 'grpc-echo', version: '0', extensions: ['statistics'] }),
  ModelMetadata: (call, cb) => cb(null, modelMetadata(nameOf(call))),
  ModelConfig: (call, cb) => cb(null, { config: modelConfig(nameOf(call)) }),
  // an empty name asks for every model's statistics (perf_analyzer asks this way)
  ModelStatistics: (call, cb) => cb(null, { model_stats: [counters.modelStats(nameOf(call) || ECHO_MODEL)] }),
  ModelInfer: (call, cb) => {
    const start = process.hrtime.bigint();
    try {
      const { response, batch } = echo(call.request as Buffer);
      cb(null, response);
      counters.record(batch, start);
    } catch (err) {
      cb({ code: grpc.status.INVALID_ARGUMENT, details: String(err) });
    }
  },
};

// The same HTTP/2 flow-control windows Nereid's frontend opens (16 MiB per stream, 64 MiB per connection).
// grpc-js's server has no option for them and would receive a 600 KB message through 64 KiB windows, a
// WINDOW_UPDATE round trip each; that is grpc-js's choice, not the runtime's limit, so unless
// --default-windows is given, its node:http2 server is created with the larger settings.
if (!process.argv.includes('--default-windows')) {
  const createServer = http2.createServer;
  const withWindows = (options: http2.ServerOptions, listener?: () => void): http2.Http2Server => {
    const settings = { ...options.settings, initialWindowSize: 16 * 1024 * 1024 };
    const s = listener
      ? createServer({ ...options, settings }, listener)
      : createServer({ ...options, settings });
    s.on('session', (session: http2.ServerHttp2Session) => session.setLocalWindowSize(64 * 1024 * 1024));
    return s;
  };
  (http2 as unknown as { createServer: typeof withWindows }).createServer = withWindows;
}
const server = new grpc.Server({
  'grpc.max_receive_message_length': 2 ** 31 - 1,
  'grpc.max_send_message_length': 2 ** 31 - 1,
});
server.addService(definition, handlers);
server.bindAsync(
  `127.0.0.1:${portArgument(process.argv)}`,
  grpc.ServerCredentials.createInsecure(),
  (err, port) => {
    if (err) throw err;
    console.log(`grpc-echo listening on ${port} (codec ${codec})`);
  },
);
process.on('SIGTERM', () => {
  server.tryShutdown(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
});
