/** Public face of the onnxruntime backend: what the composition root and tests import. */
export { OnnxRuntimeBackend, resolveModelFile, type OnnxRuntimeBackendOptions } from './backend.js';
export { OrtInstance } from './instance.js';
export { autoCompleteFromModel, defaultMaxBatchSize, DEFAULT_MAX_BATCH_SIZE } from './autocomplete.js';
export { sessionSettings, graphOptimizationLevel } from './options.js';
export { validateAgainstModel } from './validate.js';
