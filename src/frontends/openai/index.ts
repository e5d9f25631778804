/** The OpenAI-compatible frontend's public surface (docs/openai.md). */
export {
  createOpenAiHandler,
  isOpenAiPath,
  DEFAULT_MAX_BUFFERED_BYTES,
  DEFAULT_MAX_TOKENS,
  type OpenAiHandler,
  type OpenAiOptions,
} from './handler.js';
export { createOpenAiServer, type OpenAiServer, type OpenAiServerOptions } from './server.js';
