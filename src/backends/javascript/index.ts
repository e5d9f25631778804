/** Public face of the javascript backend: what the composition root and tests import. */
export { JavascriptBackend, resolveModelFile, MODEL_FILES } from './backend.js';
export { JsInstance, type JsInstanceOptions } from './instance.js';
export {
  javascriptOptions,
  DEFAULT_EXECUTION_TIMEOUT_MS,
  DEFAULT_INITIALIZE_TIMEOUT_MS,
  type JavascriptOptions,
} from './options.js';
export type { TransferCounters } from './protocol.js';
