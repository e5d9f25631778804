/**
 * A gRPC test client for the frontend's tests: @grpc/grpc-js as the transport (an independent HTTP/2 and
 * gRPC implementation) and protobufjs over our proto/ files as the codec, so requests and responses are
 * checked by code that shares nothing with the server's hand-written codecs.
 */
import { Client, Metadata, credentials, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import { protoRoot, type Plain } from './messages.js';

export const SERVICE = 'inference.GRPCInferenceService';

const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, defaults: true, oneofs: true };

/** Response type of each rpc (request type is `<Rpc>Request`). */
function types(rpc: string): { request: protobuf.Type; response: protobuf.Type; path: string } {
  const root = protoRoot();
  if (rpc === 'Check') {
    return {
      request: root.lookupType('grpc.health.v1.HealthCheckRequest'),
      response: root.lookupType('grpc.health.v1.HealthCheckResponse'),
      path: '/grpc.health.v1.Health/Check',
    };
  }
  const method = root.lookupService(SERVICE).methods[rpc];
  if (method === undefined) throw new Error(`no rpc ${rpc}`);
  return {
    request: root.lookupType(`inference.${method.requestType}`),
    response: root.lookupType(`inference.${method.responseType}`),
    path: `/${SERVICE}/${rpc}`,
  };
}

export function encodeMessage(typeName: string, value: object): Buffer {
  const t = protoRoot().lookupType(typeName);
  return Buffer.from(t.encode(t.fromObject(value)).finish());
}

export function decodeMessage(typeName: string, data: Uint8Array): Plain {
  const t = protoRoot().lookupType(typeName);
  return t.toObject(t.decode(data), TO_OBJECT);
}

export class TestClient {
  readonly client: Client;

  constructor(address: string) {
    this.client = new Client(address, credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
    });
  }

  /** Calls a unary rpc with a protobufjs plain object. */
  call(rpc: string, request: object, metadata = new Metadata(), deadline?: Date): Promise<Plain> {
    const t = types(rpc);
    return this.raw(
      t.path,
      Buffer.from(t.request.encode(t.request.fromObject(request)).finish()),
      metadata,
      deadline,
    ).then((data) => t.response.toObject(t.response.decode(data), TO_OBJECT));
  }

  /** Sends raw bytes as the request message of `path`; resolves with the raw response message. */
  raw(path: string, message: Buffer, metadata = new Metadata(), deadline?: Date): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest<Buffer, Buffer>(
        path,
        (b) => b,
        (b) => b,
        message,
        metadata,
        deadline === undefined ? {} : { deadline },
        (err: ServiceError | null, value?: Buffer) => (err ? reject(err) : resolve(value!)),
      );
    });
  }

  /** Opens ModelStreamInfer; write ModelInferRequest objects, read decoded ModelStreamInferResponses. */
  stream(metadata = new Metadata()): ClientDuplexStream<object, Plain> {
    const req = protoRoot().lookupType('inference.ModelInferRequest');
    const res = protoRoot().lookupType('inference.ModelStreamInferResponse');
    return this.client.makeBidiStreamRequest<object, Plain>(
      `/${SERVICE}/ModelStreamInfer`,
      (v) => (Buffer.isBuffer(v) ? v : Buffer.from(req.encode(req.fromObject(v)).finish())),
      (b) => res.toObject(res.decode(b), TO_OBJECT),
      metadata,
      {},
    );
  }

  close(): void {
    this.client.close();
  }
}

/** The error a rejected call carries. */
export function asServiceError(err: unknown): ServiceError {
  return err as ServiceError;
}
