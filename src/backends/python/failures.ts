/**
 * What a Python model's exception becomes for the client and for the log. The text keeps the shape of
 * Triton's Python backend, which clients and Triton's own tests match on — `Failed to process the
 * request(s) for model ...`, then `, message: <Type>: <message>`, then `At:` and the frames innermost
 * first — with two changes: the prefix names the model, its version and the instance
 * (`for model 'm' version 1 instance 'm_0_0'`, where Triton names only the instance), and the frames are
 * only those in the model's own files, named relative to the model folder (`1/model.py(45): execute`),
 * never the absolute paths of the server's folders, libraries and triton_python_backend_utils (Triton
 * shows them all). The whole traceback goes to the log (../model-errors.ts ModelErrorLog).
 */
import path from 'node:path';
import { relativizePaths } from '../../common/confine.js';
import type { Logger } from '../../common/logger.js';
import {
  MAX_MODEL_STACK,
  capModelText,
  identityText,
  pythonFrames,
  userFrames,
  type ModelErrorLog,
  type ModelIdentity,
  type ModelPhase,
} from '../model-errors.js';
import { isJsonObject } from './frames.js';

export interface PythonFailureScope {
  readonly id: ModelIdentity;
  /** The model folder as configured and as its real path. */
  readonly modelDirs: readonly string[];
  readonly errors: ModelErrorLog;
  readonly log: Logger;
}

/** messages.ErrorInfo of the stub, checked. */
export interface ErrorInfo {
  readonly type: string;
  readonly message: string;
  readonly frames: unknown;
  readonly traceback: string;
  /** At initialize: 'import' when model.py itself failed to import. */
  readonly phase?: 'import' | 'initialize';
}

export function errorInfoOf(raw: unknown): ErrorInfo | undefined {
  if (!isJsonObject(raw)) return undefined;
  const r = raw;
  if (typeof r.type !== 'string' || typeof r.message !== 'string') return undefined;
  return {
    type: capModelText(r.type, 256),
    message: capModelText(r.message),
    frames: r.frames,
    traceback: typeof r.traceback === 'string' ? capModelText(r.traceback, MAX_MODEL_STACK) : '',
    ...(r.phase === 'import' || r.phase === 'initialize' ? { phase: r.phase } : {}),
  };
}

/**
 * `<Type>: <message>\n\nAt:\n  1/model.py(45): execute\n` (pybind11's layout, which Triton sends): the
 * exception and the frames in the user's files. Returns the text and the user's first frame.
 */
export function describePythonException(
  info: ErrorInfo,
  modelDirs: readonly string[],
): { text: string; what: string; where: ReturnType<typeof userFrames>[number] | undefined } {
  const folders = [...modelDirs, ...modelDirs.map((d) => path.dirname(d))];
  const what = relativizePaths(info.message ? `${info.type}: ${info.message}` : info.type, folders);
  const mine = userFrames(pythonFrames(info.frames), modelDirs, 'python');
  let text = what;
  if (mine.length > 0) {
    text += '\n\nAt:\n' + mine.map((f) => `  ${f.text}: ${f.frame.fn ?? '<module>'}\n`).join('');
  }
  return { text, what, where: mine[0] };
}

/**
 * The client's message for a raising execute (`phase` execute) or initialize: execute errors carry the
 * prefix; initialize errors are the exception text alone, as Triton's load error is (its reason reads
 * `TritonModelException: ...\n\nAt:\n  1/model.py(10): initialize\n`).
 */
export function pythonFailure(info: ErrorInfo, scope: PythonFailureScope, asked: ModelPhase): string {
  const phase = asked === 'initialize' && info.phase === 'import' ? 'import' : asked;
  const { text, what, where } = describePythonException(info, scope.modelDirs);
  const message =
    phase === 'execute'
      ? `Failed to process the request(s) for ${identityText(scope.id)}, message: ${text}`
      : text;
  const headline =
    phase === 'execute'
      ? message
      : `${identityText(scope.id)}: ${phase === 'import' ? 'import of model.py' : 'initialize()'} failed: ${text}`;
  scope.errors.report({
    id: scope.id,
    phase,
    message: what,
    where,
    headline: headline.trimEnd(),
    stack: info.traceback.trimEnd() || undefined,
  });
  return message;
}
