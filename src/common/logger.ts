/**
 * A small leveled logger shaped like Triton's: info/warning/error switches, a verbose level, and the
 * `default` or `ISO8601` line format. Settings are per instance (no global state); the logging
 * extension changes them at run time.
 */

export type LogFormat = 'default' | 'ISO8601';

export interface LogSettings {
  logInfo: boolean;
  logWarning: boolean;
  logError: boolean;
  logVerbose: number;
  logFormat: LogFormat;
}

export type LogSink = (line: string) => void;

export class Logger {
  readonly settings: LogSettings;
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
  /** Writes a line with no prefix (startup tables). */
  raw(msg: string): void {
    if (this.settings.logInfo) this.sink(msg);
  }

  private write(severity: string, msg: string): void {
    const now = new Date();
    let prefix: string;
    if (this.settings.logFormat === 'ISO8601') {
      prefix = `${now.toISOString()} ${severity} ${process.pid}]`;
    } else {
      const mm = String(now.getMonth() + 1).padStart(2, '0');
      const dd = String(now.getDate()).padStart(2, '0');
      const time = now.toISOString().slice(11, 23);
      prefix = `${severity}${mm}${dd} ${time} ${process.pid}]`;
    }
    this.sink(`${prefix} ${msg}`);
  }
}

/** A logger that drops everything (tests). */
export const silentLogger = (): Logger => new Logger({}, () => {});
