/**
 * A small leveled logger shaped like Triton's: info/warning/error switches, a verbose level, and Triton's
 * line formats, so parsers of Triton's logs read Nereid's (triton-inference-server/common logging.cc):
 *
 * - `default`: `I1201 18:46:09.714123 11373 server.ts:123] "msg"`: severity, month and day, time with
 *   microseconds, pid, the caller's source file and line; date and time both UTC.
 * - `ISO8601`: `2026-12-01T18:46:09Z I 11373 server.ts:123] "msg"` (whole seconds, as Triton).
 * - `json` (a Nereid addition): one JSON object a line, `{"time","severity","pid","file","line","message"}`
 *   with the time in ISO 8601 with microseconds.
 *
 * As in Triton, a message is written JSON-encoded (in double quotes, newlines and quotes escaped, so one
 * message is one line whatever it holds) unless the environment sets TRITON_SERVER_ESCAPE_LOG_MESSAGES=0.
 * Settings are per instance (no global state); the logging extension changes them at run time.
 */
import { LogRing } from './log-ring.js';
import { callerLocation } from './source-location.js';

export type LogFormat = 'default' | 'ISO8601' | 'json';

export const LOG_FORMATS: readonly LogFormat[] = ['default', 'ISO8601', 'json'];

export const isLogFormat = (v: unknown): v is LogFormat => LOG_FORMATS.includes(v as LogFormat);

const SEVERITY_NAMES: Readonly<Record<string, string>> = { I: 'INFO', W: 'WARNING', E: 'ERROR' };

/** Microseconds since the epoch, from the monotonic clock anchored at the process's start. */
function nowMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

const two = (n: number): string => String(n).padStart(2, '0');

/** One log line in `format`, at `micros` (since the epoch), from `file:line`. */
export function formatLogLine(
  format: LogFormat,
  severity: 'I' | 'W' | 'E',
  micros: number,
  pid: number,
  file: string,
  line: number,
  msg: string,
  escape: boolean,
): string {
  const date = new Date(Math.floor(micros / 1000));
  const usec = String(micros % 1_000_000).padStart(6, '0');
  const iso = date.toISOString().slice(0, 19);
  if (format === 'json') {
    return JSON.stringify({
      time: `${iso}.${usec}Z`,
      severity: SEVERITY_NAMES[severity],
      pid,
      file,
      line,
      message: msg,
    });
  }
  const text = escape ? JSON.stringify(msg) : msg;
  if (format === 'ISO8601') return `${iso}Z ${severity} ${pid} ${file}:${line}] ${text}`;
  const stamp = `${two(date.getUTCMonth() + 1)}${two(date.getUTCDate())} ${iso.slice(11)}.${usec}`;
  return `${severity}${stamp} ${pid} ${file}:${line}] ${text}`;
}

/**
 * A log line with its message as written by the model or the server: a Triton-format line's JSON-escaped
 * message decoded (tests and tools that read logs match on the message itself); other lines unchanged.
 */
export function decodeLogMessage(line: string): string {
  const m = /^(.*?\] )(".*")$/s.exec(line);
  if (m === null) return line;
  try {
    const text: unknown = JSON.parse(m[2]);
    return typeof text === 'string' ? m[1] + text : line;
  } catch {
    return line;
  }
}

export interface LogSettings {
  logInfo: boolean;
  logWarning: boolean;
  logError: boolean;
  logVerbose: number;
  logFormat: LogFormat;
}

export type LogSink = (line: string) => void;

const LEVELS = { I: 'INFO', W: 'WARNING', E: 'ERROR' } as const;

export class Logger {
  readonly settings: LogSettings;
  /** The last lines written (the dashboard's log view); only lines the switches let through. */
  readonly recent = new LogRing();
  constructor(
    settings: Partial<LogSettings> = {},
    private readonly sink: LogSink = (line) => process.stderr.write(line + '\n'),
  ) {
    this.settings = {
      logInfo: settings.logInfo ?? true,
      logWarning: settings.logWarning ?? true,
      logError: settings.logError ?? true,
      logVerbose: settings.logVerbose ?? 0,
      logFormat: settings.logFormat ?? 'default',
    };
  }

  info(msg: string): void {
    if (this.settings.logInfo) this.write('I', msg);
  }
  warn(msg: string): void {
    if (this.settings.logWarning) this.write('W', msg);
  }
  error(msg: string): void {
    if (this.settings.logError) this.write('E', msg);
  }
  /** Logged when the verbose level is at least `level` (1 by default). */
  verbose(msg: string, level = 1): void {
    if (this.settings.logVerbose >= level) this.write('I', msg);
  }
  isVerbose(level = 1): boolean {
    return this.settings.logVerbose >= level;
  }
  /**
   * A line another thread's Logger formatted and let through its switches (a gRPC protocol thread's,
   * frontends/grpc/threads/), written to this logger's sink as it is.
   */
  relay(line: string): void {
    this.sink(line);
  }
  /** Writes a line with no prefix (startup tables). */
  raw(msg: string): void {
    if (this.settings.logInfo) this.sink(msg);
  }

  /**
   * A line from elsewhere with its own source location (a Python model's pb_utils.Logger: `model.py:12`),
   * under the same switches: 'verbose' lines need a verbose level of at least 1.
   */
  logAt(severity: 'I' | 'W' | 'E' | 'verbose', file: string, line: number, msg: string): void {
    const on =
      severity === 'verbose'
        ? this.settings.logVerbose >= 1
        : severity === 'I'
          ? this.settings.logInfo
          : severity === 'W'
            ? this.settings.logWarning
            : this.settings.logError;
    if (on) this.emit(severity === 'verbose' ? 'I' : severity, file, line, msg);
  }

  /** Called from info/warn/error/verbose only: the location printed is their caller's, one frame down. */
  private write(severity: 'I' | 'W' | 'E', msg: string): void {
    // eslint-disable-next-line @typescript-eslint/unbound-method
    const at = callerLocation(Logger.prototype.write, 1);
    this.emit(severity, at.file, at.line, msg);
  }

  private emit(severity: 'I' | 'W' | 'E', file: string, line: number, msg: string): void {
    const escape = process.env.TRITON_SERVER_ESCAPE_LOG_MESSAGES !== '0';
    this.recent.push(LEVELS[severity], file, line, msg);
    this.sink(
      formatLogLine(this.settings.logFormat, severity, nowMicros(), process.pid, file, line, msg, escape),
    );
  }
}

/** A logger that drops everything (tests). */
export const silentLogger = (): Logger => new Logger({}, () => {});
