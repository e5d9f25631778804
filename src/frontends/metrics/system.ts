/**
 * The "per interval" host metrics, read from /proc like Triton does: CPU utilization over the last
 * interval from /proc/stat (busy = user+nice+system+irq+softirq+steal, idle = idle+iowait) and memory from
 * /proc/meminfo (used = MemTotal - MemAvailable). Where /proc is missing or unreadable the values are 0,
 * as in Triton.
 */
import { readFile } from 'node:fs/promises';

export interface CpuTimes {
  readonly busy: number;
  readonly idle: number;
}

export interface MemoryInfo {
  readonly totalBytes: number;
  readonly usedBytes: number;
}

export interface SystemValues {
  cpuUtilization: number;
  memoryTotalBytes: number;
  memoryUsedBytes: number;
}

/** The aggregate `cpu ` line of /proc/stat, or undefined when it is not there or not numbers. */
export function parseProcStat(text: string): CpuTimes | undefined {
  const nl = text.indexOf('\n');
  const line = nl < 0 ? text : text.slice(0, nl);
  if (!line.startsWith('cpu ')) return undefined;
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 8 || f.some((n) => !Number.isFinite(n) || n < 0)) return undefined;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f;
  return { busy: user + nice + system + irq + softirq + steal, idle: idle + iowait };
}

export function cpuUtilization(now: CpuTimes, before: CpuTimes): number {
  const busy = Math.max(0, now.busy - before.busy);
  const idle = Math.max(0, now.idle - before.idle);
  return busy + idle > 0 ? busy / (busy + idle) : 0;
}

export function parseMeminfo(text: string): MemoryInfo | undefined {
  const kb = (key: string): number | undefined => {
    const m = new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const total = kb('MemTotal');
  const available = kb('MemAvailable');
  if (total === undefined || available === undefined || available > total) return undefined;
  return { totalBytes: total, usedBytes: total - available };
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Polls /proc every interval; `values` always holds the latest reading. */
export class SystemPoller {
  readonly values: SystemValues = { cpuUtilization: 0, memoryTotalBytes: 0, memoryUsedBytes: 0 };
  private last: CpuTimes | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly procRoot = '/proc',
  ) {}

  /** Takes the baseline reading and starts the timer. */
  async start(): Promise<void> {
    await this.poll();
    this.timer = setInterval(() => {
      this.polling ??= this.poll().finally(() => (this.polling = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.polling;
  }

  async poll(): Promise<void> {
    const [stat, meminfo] = await Promise.all([
      readText(`${this.procRoot}/stat`),
      readText(`${this.procRoot}/meminfo`),
    ]);
    const cpu = stat === undefined ? undefined : parseProcStat(stat);
    this.values.cpuUtilization = cpu && this.last ? cpuUtilization(cpu, this.last) : 0;
    if (cpu) this.last = cpu;
    const mem = meminfo === undefined ? undefined : parseMeminfo(meminfo);
    this.values.memoryTotalBytes = mem?.totalBytes ?? 0;
    this.values.memoryUsedBytes = mem?.usedBytes ?? 0;
  }
}
