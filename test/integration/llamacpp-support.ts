// What the llamacpp backend's integration tests share: the tiny GGUF model scripts/setup-llm-models.sh
// writes (npm test runs it), its Gemma 3 sibling with a sliding window, and the config that serves a GGUF
// with the llamacpp backend.
import path from 'node:path';
import { ROOT } from './harness.js';

export const TINY_GGUF = path.join(ROOT, '.cache/llm-models/current/tiny-llama.gguf');
/** A Gemma 3 architecture model whose layers but the last attend to the last 16 positions only. */
export const TINY_SWA_GGUF = path.join(ROOT, '.cache/llm-models/current/tiny-swa.gguf');
export const LLAMACPP_CONFIG = 'backend: "llamacpp"\n';
