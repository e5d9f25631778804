// What the llamacpp backend's integration tests share: the tiny GGUF model scripts/setup-llm-models.sh
// writes (npm test runs it), and the config that serves a GGUF with the llamacpp backend.
import path from 'node:path';
import { ROOT } from './harness.js';

export const TINY_GGUF = path.join(ROOT, '.cache/llm-models/current/tiny-llama.gguf');
export const LLAMACPP_CONFIG = 'backend: "llamacpp"\n';
