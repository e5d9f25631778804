/**
 * `nereid-server/client`: a typed client for Nereid and Triton servers, shaped like Triton's Python client.
 * HttpClient and GrpcClient implement the same InferenceClient interface; InferInput, InferRequestedOutput
 * and InferResult carry tensors for both.
 */
export {
  HttpClient,
  type HttpClientOptions,
  type HttpInferOptions,
  type Compression,
  type GenerateOptions,
  type GenerateRequest,
  type GenerateResponse,
} from './http/client.js';
export { GrpcClient, type GrpcClientOptions, type StreamOptions } from './grpc/client.js';
export { InferStream, type StreamInferRequest, type StreamInferResponse } from './grpc/stream.js';
export { InferInput, InferRequestedOutput } from './infer-input.js';
export type {
  ParameterValue,
  RequestedOutputOptions,
  SetDataOptions,
  SharedMemoryRef,
} from './infer-input.js';
export { InferResult, type OutputInfo, type OutputTensor } from './infer-result.js';
export { NereidClientError, GrpcStatus, type NereidClientErrorInit } from './errors.js';
export { fromBFloat16Bits, fromFloat16Bits, toBFloat16Bits, toFloat16Bits } from '../common/half.js';
export type {
  ArrayOf,
  FixedDataType,
  TensorArray,
  TensorValues,
  TypedArray,
  TypedArrayOf,
} from './tensor-data.js';
export type * from './types.js';
export type { DataType } from '../common/datatype.js';
