/** The gRPC frontend's public surface. */
export { createGrpcFrontend, MODEL_INFER_PATH, MODEL_STREAM_INFER_PATH } from './server.js';
export type { GrpcFrontend, GrpcFrontendOptions } from './server.js';
export { createThreadedGrpcFrontend, grpcThreadsRefusal } from './threads/pool.js';
export { grpcStatusOf, Status, type StatusCode } from './transport/status.js';
export { PROTO_DIR } from './messages.js';
