/**
 * The package's public entry (`import ... from 'nereid'`): start a server from tritonserver-style flags or
 * options, and the core types an application needs to talk to it in-process.
 */
export { startNereid, type RunningNereid, type Endpoint } from './cli/compose.js';
export { parseFlags } from './cli/flags.js';
export type { ServerOptions } from './cli/options.js';
export type { InferenceServerApi } from './core/server-api.js';
export type * from './core/types.js';
export { NereidError, type ErrorCode } from './common/errors.js';
export { Logger, type LogSettings } from './common/logger.js';
export type { DataType } from './common/datatype.js';
export type { Tensor } from './common/tensor.js';
