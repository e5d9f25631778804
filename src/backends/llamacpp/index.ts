/** The `llamacpp` backend: GGUF language models on llama.cpp's CPU build (docs/llm.md). */
export { LlamacppBackend, MODEL_FILE } from './backend.js';
