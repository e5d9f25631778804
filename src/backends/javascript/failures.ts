/**
 * What a JavaScript model's failure becomes: the error the client gets (model, version, instance, the hook
 * that failed and the first frame in the user's own file, ../model-errors.ts) and the log entry with the
 * whole stack (rate-limited by the model version's ModelErrorLog). A NereidError the model threw is its
 * chosen answer to the client: code and message stay as they are, and it is not logged as a failure.
 */
import path from 'node:path';
import { NereidError } from '../../common/errors.js';
import { relativizePaths } from '../../common/confine.js';
import type { Logger } from '../../common/logger.js';
import {
  MAX_MODEL_STACK,
  capModelText,
  modelFailureText,
  parseV8Stack,
  relativeToModel,
  userFrames,
  type ModelErrorLog,
  type ModelIdentity,
  type ModelPhase,
  type UserFrame,
} from '../model-errors.js';
import type { WireError } from './protocol.js';

export interface FailureScope {
  readonly id: ModelIdentity;
  /** The model folder as configured and as its real path (stack frames name the real one). */
  readonly modelDirs: readonly string[];
  readonly errors: ModelErrorLog;
  readonly log: Logger;
}

/** The client's error for what a model threw in `fallback` (the phase the worker names wins). */
export function modelFailure(e: WireError, scope: FailureScope, fallback: ModelPhase): NereidError {
  const stack = e.stack === undefined ? undefined : capModelText(e.stack, MAX_MODEL_STACK);
  if (e.chosen) {
    if (stack) scope.log.verbose(`${scope.id.instance ?? scope.id.model}: ${stack}`);
    return new NereidError(e.code, capModelText(String(e.message)));
  }
  const phase = e.phase ?? fallback;
  // Messages may name files (ENOENT: '/srv/models/m/1/vocab.txt'): only relative to the model folder.
  const folders = [...scope.modelDirs, ...scope.modelDirs.map((d) => path.dirname(d))];
  let where: UserFrame | undefined;
  let what: string;
  if (e.build) {
    const relative = relativeToModel(e.build.file, scope.modelDirs) ?? path.basename(e.build.file);
    where = {
      frame: { file: e.build.file, line: e.build.line, column: e.build.column },
      relative,
      text: `${relative}:${e.build.line}:${e.build.column}`,
    };
    what = e.build.text;
  } else {
    where = stack ? userFrames(parseV8Stack(stack), scope.modelDirs, 'javascript')[0] : undefined;
    what = capModelText(e.name ? `${capModelText(e.name, 256)}: ${e.message}` : String(e.message));
  }
  what = relativizePaths(what, folders);
  const headline = modelFailureText(scope.id, phase, what, where);
  scope.errors.report({
    id: scope.id,
    phase,
    message: what,
    where,
    headline,
    stack: e.build ? stack?.split('\n')[0] : stack,
  });
  return new NereidError(e.code, headline);
}
