/**
 * The server's last log lines, kept in memory for the dashboard's GET /dashboard/api/logs: a fixed-size ring
 * (the oldest line makes room for the newest), so a day of logging holds no more than its capacity.
 * Lines are kept as fields, not formatted text: the page shows them as text, and filters by level.
 */

export interface LogEntry {
  /** A running number from 1, so a reader can ask only for lines after the last it saw. */
  readonly seq: number;
  /** ISO 8601, UTC, with milliseconds. */
  readonly time: string;
  readonly level: 'INFO' | 'WARNING' | 'ERROR';
  readonly file: string;
  readonly line: number;
  readonly message: string;
}

export const LOG_RING_CAPACITY = 500;

export class LogRing {
  private readonly entries: (LogEntry | undefined)[];
  private next = 0;
  private seq = 0;

  constructor(readonly capacity = LOG_RING_CAPACITY) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive integer');
    this.entries = new Array<LogEntry | undefined>(capacity);
  }

  push(level: LogEntry['level'], file: string, line: number, message: string, at = Date.now()): void {
    this.entries[this.next] = {
      seq: ++this.seq,
      time: new Date(at).toISOString(),
      level,
      file,
      line,
      message,
    };
    this.next = (this.next + 1) % this.capacity;
  }

  /** The kept lines, oldest first; only those numbered above `after` when given. */
  lines(after = 0): LogEntry[] {
    const out: LogEntry[] = [];
    for (let i = 0; i < this.capacity; i++) {
      const e = this.entries[(this.next + i) % this.capacity];
      if (e !== undefined && e.seq > after) out.push(e);
    }
    return out;
  }
}
