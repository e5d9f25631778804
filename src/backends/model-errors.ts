/**
 * Errors a model author can act on, shared by the JavaScript and Python backends: where in the user's own
 * files a model failed, and a log that shows each distinct failure's whole stack once.
 *
 * - The **user's frame** is the innermost stack frame in a file inside the model folder (not below a
 *   `node_modules` or `site-packages` folder there). Frames of Nereid's own code, Node's internals,
 *   `triton_python_backend_utils` and libraries all lie outside it and are skipped. It is named relative
 *   to the model folder (`1/model.ts:6:18`, `1/model.py(45)`), the same rule load errors follow
 *   (docs/security.md): a client learns the model's own file and line, never where the server keeps it.
 * - The **log** (ModelErrorLog) writes the whole stack, absolute paths included, at the error level the
 *   first time a distinct error happens (key: model, version, phase, message, user frame); repeats are
 *   counted and summarised in one line at most once per SUMMARY_INTERVAL_MS per key, and at most
 *   MAX_STACKS_PER_INTERVAL new stacks per interval per model version are written (an error whose message
 *   carries request data is a new key each time), so a model failing every request cannot flood the log.
 *   Summaries are written when the next occurrence comes (no timer) and when the model version unloads.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../common/logger.js';

/**
 * The longest message text of a model's error that reaches a client or the log (issue 33): a model that
 * raises with a 50 MB message must not send 50 MB to its client, or write it to the log, per request.
 */
export const MAX_MODEL_MESSAGE = 4096;
/** The longest stack (traceback) of a model's error written to the log. */
export const MAX_MODEL_STACK = 64 * 1024;

/** `text` cut at `max` characters, saying how much was cut. */
export function capModelText(text: string, max = MAX_MODEL_MESSAGE): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}... [${text.length - max} more characters cut]`;
}

/** One frame of a stack, innermost first in every list here. */
export interface StackFrame {
  readonly file: string;
  readonly line: number;
  /** JavaScript frames have one; Python frames do not. */
  readonly column?: number;
  readonly fn?: string;
}

/** Where a model failed: the frame in the user's file and how a client reads it. */
export interface UserFrame {
  readonly frame: StackFrame;
  /** The file relative to the model folder, with `/` separators. */
  readonly relative: string;
  /** `1/model.ts:6:18` (JavaScript) or `1/model.py(45)` (Python, as Python tracebacks write it). */
  readonly text: string;
}

const V8_FRAME = /^\s*at (?:(.*?) \()?(.+?):(\d+):(\d+)\)?\s*$/;

/** The frames of a V8 `error.stack` (lines that are not `at file:line:column` frames are skipped). */
export function parseV8Stack(stack: string): StackFrame[] {
  const frames: StackFrame[] = [];
  for (const line of stack.split('\n')) {
    const m = V8_FRAME.exec(line);
    if (!m) continue;
    let file = m[2];
    if (file.startsWith('file://')) {
      try {
        file = fileURLToPath(file);
      } catch {
        continue;
      }
    }
    if (!path.isAbsolute(file)) continue; // node:internal/..., <anonymous>, eval frames
    frames.push({ file, line: Number(m[3]), column: Number(m[4]), ...(m[1] ? { fn: m[1] } : {}) });
  }
  return frames;
}

/** Python frames as the stub sends them: `[file, line, function]`, innermost first. */
export function pythonFrames(raw: unknown): StackFrame[] {
  if (!Array.isArray(raw)) return [];
  const frames: StackFrame[] = [];
  for (const f of raw) {
    if (!Array.isArray(f) || typeof f[0] !== 'string' || typeof f[1] !== 'number') continue;
    frames.push({ file: f[0], line: f[1], ...(typeof f[2] === 'string' ? { fn: f[2] } : {}) });
  }
  return frames;
}

const LIBRARY_FOLDER = /(^|\/)(node_modules|site-packages|dist-packages|__pycache__)\//;

/** `file` relative to the first of `modelDirs` that holds it (and not in a library folder there). */
export function relativeToModel(file: string, modelDirs: readonly string[]): string | undefined {
  for (const dir of modelDirs) {
    if (!dir) continue;
    const rel = path.relative(dir, file);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) continue;
    const slashed = rel.split(path.sep).join('/');
    if (LIBRARY_FOLDER.test(slashed)) return undefined;
    return slashed;
  }
  return undefined;
}

/** Every frame in the user's files, innermost first, with its client-readable text. */
export function userFrames(
  frames: readonly StackFrame[],
  modelDirs: readonly string[],
  style: 'javascript' | 'python',
): UserFrame[] {
  const out: UserFrame[] = [];
  for (const frame of frames) {
    const relative = relativeToModel(frame.file, modelDirs);
    if (relative === undefined) continue;
    const text =
      style === 'python'
        ? `${relative}(${frame.line})`
        : `${relative}:${frame.line}${frame.column !== undefined ? `:${frame.column}` : ''}`;
    out.push({ frame, relative, text });
  }
  return out;
}

/** Which hook of the model failed; `build` is a TypeScript transform, `import` the module's own code. */
export type ModelPhase = 'build' | 'import' | 'initialize' | 'execute' | 'finalize' | 'autocomplete';

/** How a phase reads in messages. */
export const PHASE_TEXT: Readonly<Record<ModelPhase, string>> = {
  build: 'TypeScript build',
  import: 'import of the model module',
  initialize: 'initialize()',
  execute: 'execute()',
  finalize: 'finalize()',
  autocomplete: 'autoCompleteConfig()',
};

/** What names a model instance in messages: `model 'm' version 1 instance 'm_0'`. */
export interface ModelIdentity {
  readonly model: string;
  readonly version: number | string;
  readonly instance?: string;
}

export const identityText = (id: ModelIdentity): string =>
  `model '${id.model}' version ${id.version}${id.instance !== undefined ? ` instance '${id.instance}'` : ''}`;

/**
 * The one-line message a client gets for a JavaScript model that threw (a Python model keeps Triton's
 * text, see the Python backend): `model 'm' version 1 instance 'm_0': execute() failed at
 * 1/model.ts:6:18: TypeError: Cannot read ...`. `what` is the error's own `Name: message`.
 */
export function modelFailureText(
  id: ModelIdentity,
  phase: ModelPhase,
  what: string,
  where: UserFrame | undefined,
): string {
  const at = where ? ` at ${where.text}` : '';
  return `${identityText(id)}: ${PHASE_TEXT[phase]} failed${at}: ${what}`;
}

/** One failure for the log: `headline` is what the client read, `stack` the whole stack (server paths). */
export interface ModelFailure {
  readonly id: ModelIdentity;
  readonly phase: ModelPhase;
  /** The error's own text (no instance, no location): part of the key. */
  readonly message: string;
  readonly where: UserFrame | undefined;
  readonly headline: string;
  readonly stack: string | undefined;
}

/** How often a repeated error is summarised, per key. */
export const SUMMARY_INTERVAL_MS = 60_000;
/** New stacks written per model version per interval; more distinct errors are counted instead. */
export const MAX_STACKS_PER_INTERVAL = 10;
/** Keys remembered per model version (the oldest is forgotten first). */
const MAX_KEYS = 256;

interface Seen {
  /** Occurrences not yet in a summary. */
  repeats: number;
  /** When the stack or the last summary was written. */
  lastWritten: number;
  readonly headline: string;
}

export interface ModelErrorLogOptions {
  readonly log: Logger;
  /** Milliseconds; tests pass their own clock. */
  readonly now?: () => number;
}

/** The rate-limited failure log of one model version (see the module comment). */
export class ModelErrorLog {
  private readonly seen = new Map<string, Seen>();
  private readonly now: () => number;
  private intervalStart = Number.NEGATIVE_INFINITY;
  private stacksInInterval = 0;
  /** Distinct errors whose stack was not written in this interval. */
  private unwritten = 0;

  constructor(private readonly options: ModelErrorLogOptions) {
    this.now = options.now ?? Date.now;
  }

  report(f: ModelFailure): void {
    const now = this.now();
    const key = [f.id.model, f.id.version, f.phase, f.message, f.where?.text ?? ''].join('\u0000');
    const seen = this.seen.get(key);
    if (seen) {
      seen.repeats++;
      if (now - seen.lastWritten >= SUMMARY_INTERVAL_MS) this.summarise(seen, now);
      return;
    }
    if (now - this.intervalStart >= SUMMARY_INTERVAL_MS) {
      if (this.unwritten > 0) {
        this.options.log.error(
          `${identityText({ model: f.id.model, version: f.id.version })}: ${this.unwritten} more distinct error(s) in the last interval were not logged (at most ${MAX_STACKS_PER_INTERVAL} stacks per ${SUMMARY_INTERVAL_MS / 1000} s)`,
        );
      }
      this.intervalStart = now;
      this.stacksInInterval = 0;
      this.unwritten = 0;
    }
    if (this.stacksInInterval >= MAX_STACKS_PER_INTERVAL) {
      this.unwritten++;
      return;
    }
    this.stacksInInterval++;
    if (this.seen.size >= MAX_KEYS) this.seen.delete(this.seen.keys().next().value!);
    this.seen.set(key, { repeats: 0, lastWritten: now, headline: f.headline });
    this.options.log.error(
      f.stack ? `${f.headline}\n${f.stack}` : `${f.headline} (no stack: the error was not an exception)`,
    );
  }

  /** Writes the summaries still owed (the model version unloads). */
  flush(): void {
    const now = this.now();
    for (const seen of this.seen.values()) if (seen.repeats > 0) this.summarise(seen, now);
  }

  private summarise(seen: Seen, now: number): void {
    const secs = Math.max(1, Math.round((now - seen.lastWritten) / 1000));
    this.options.log.error(
      `${seen.headline} [repeated ${seen.repeats} more time(s) in the last ${secs} s; the stack was logged at its first occurrence]`,
    );
    seen.repeats = 0;
    seen.lastWritten = now;
  }
}
