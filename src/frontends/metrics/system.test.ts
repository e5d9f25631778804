import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { SystemPoller, cpuUtilization, parseMeminfo, parseProcStat } from './system.js';

const STAT = (user: number, idle: number) =>
  `cpu  ${user} 0 100 ${idle} 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1\n`;
const MEMINFO = 'MemTotal:       16000 kB\nMemFree:         1000 kB\nMemAvailable:    4000 kB\n';

describe('host metrics from /proc', () => {
  it('parses the aggregate cpu line (busy = user+nice+system+irq+softirq+steal, idle = idle+iowait)', () => {
    assert.deepEqual(parseProcStat(STAT(300, 1000)), { busy: 400, idle: 1050 });
    assert.equal(parseProcStat('cpu0 1 2 3 4 5 6 7 8\n'), undefined);
    assert.equal(parseProcStat('cpu  1 2 x\n'), undefined);
    assert.equal(parseProcStat(''), undefined);
  });

  it('utilization is the busy share of the time elapsed between two readings', () => {
    assert.equal(cpuUtilization({ busy: 400, idle: 700 }, { busy: 100, idle: 0 }), 0.3);
    assert.equal(cpuUtilization({ busy: 1, idle: 1 }, { busy: 1, idle: 1 }), 0);
  });

  it('memory used = MemTotal - MemAvailable, in bytes', () => {
    assert.deepEqual(parseMeminfo(MEMINFO), { totalBytes: 16000 * 1024, usedBytes: 12000 * 1024 });
    assert.equal(parseMeminfo('MemTotal: 10 kB\n'), undefined);
    assert.equal(parseMeminfo('MemTotal: 10 kB\nMemAvailable: 20 kB\n'), undefined);
  });

  it('polls a /proc folder; values are 0 where it cannot be read', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-proc-'));
    try {
      writeFileSync(path.join(dir, 'stat'), STAT(0, 0));
      writeFileSync(path.join(dir, 'meminfo'), MEMINFO);
      const p = new SystemPoller(60_000, dir);
      await p.start();
      assert.equal(p.values.cpuUtilization, 0, 'no interval has passed yet');
      assert.equal(p.values.memoryTotalBytes, 16000 * 1024);
      writeFileSync(path.join(dir, 'stat'), STAT(150, 300));
      await p.poll();
      // busy grew by 150, idle by 300 (idle+iowait 50 -> 350)
      assert.equal(p.values.cpuUtilization, 150 / 450);
      await p.stop();
      const missing = new SystemPoller(60_000, path.join(dir, 'nope'));
      await missing.poll();
      assert.deepEqual(missing.values, { cpuUtilization: 0, memoryTotalBytes: 0, memoryUsedBytes: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
