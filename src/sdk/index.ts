/**
 * `nereid-server/sdk` — the typed API for JavaScript and TypeScript models run by the `javascript` backend
 * (docs/javascript-models.md). Inside a model's worker, `import ... from 'nereid-server'` and `'nereid/sdk'`
 * both resolve to this module, wherever the model lives. It stays free of server code, so it loads fast
 * in every worker.
 */
export {
  Tensor,
  encodeBytesElements,
  decodeBytesElements,
  dataTypeOfTypedArray,
  type DataType,
  type ElementValue,
  type FixedDataType,
  type TensorOptions,
  type TensorSource,
  type TypedArray,
  type TypedArrayByDataType,
} from './tensor.js';
export {
  InferenceRequest,
  getInputTensorByName,
  REQUEST_FLAG_SEQUENCE_START,
  REQUEST_FLAG_SEQUENCE_END,
  RESPONSE_COMPLETE_FINAL,
  type InferenceRequestInit,
  type ResponseSender,
} from './request.js';
export {
  InferenceResponse,
  getOutputTensorByName,
  toNereidError,
  type InferenceResponseInit,
  type ParameterValue,
  type Parameters,
} from './response.js';
export { NereidError, type ErrorCode } from '../common/errors.js';
export {
  AutoCompleteConfig,
  getInputConfigByName,
  getOutputConfigByName,
  getParameter,
  usingDecoupledTransactionPolicy,
  dataTypeFromConfig,
  dataTypeToConfig,
  type ModelConfigJson,
  type TensorConfigJson,
} from './config.js';
export { logger, type ModelLogger, type LogLevel } from './logger.js';
export {
  Metric,
  MetricFamily,
  MetricRegistry,
  defaultMetricRegistry,
  type MetricKind,
  type MetricFamilyInit,
  type MetricSnapshot,
  type MetricFamilySnapshot,
} from './metrics.js';
export type {
  GeneratorModel,
  YieldedResponse,
  Model,
  ModelClass,
  ModelFactory,
  ModelContext,
  ModelInitializeArgs,
  ExecuteResult,
} from './model.js';
