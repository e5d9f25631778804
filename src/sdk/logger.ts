/**
 * Logging from model code: lines go to the server's log (with its verbosity switches) prefixed by the
 * model instance, like pb_utils.Logger. Outside a model worker they go to stderr.
 */
import { currentRuntime, type LogLevel } from './runtime.js';

export type { LogLevel };

export interface ModelLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  /** Shown when the server runs with --log-verbose >= 1. */
  verbose(message: string): void;
  log(message: string, level?: LogLevel): void;
}

function emit(level: LogLevel, message: string): void {
  const rt = currentRuntime();
  if (rt) rt.log(level, String(message));
  else if (level !== 'verbose') process.stderr.write(`${level.toUpperCase()}: ${String(message)}\n`);
}

export const logger: ModelLogger = {
  info: (m) => emit('info', m),
  warn: (m) => emit('warn', m),
  error: (m) => emit('error', m),
  verbose: (m) => emit('verbose', m),
  log: (m, level = 'info') => emit(level, m),
};
