/**
 * The health of a model version's instances that run in processes of their own (Python stubs): how many
 * times each was restarted and how much resident memory it holds now, for the metrics and the dashboard.
 * The backend tells only the process id an instance runs in now (InstanceHandle.pid); a restart is seen
 * here as that id changing, so this samples the ids a few times a second while the version is loaded (a
 * restart takes at least a Python interpreter's start, far longer than the period) and again on every read.
 * A stub that is down between two processes has no id and counts nothing until its successor has one.
 * Every version samples on the same shared tick (common/shared-ticker.ts).
 */
import type { InstanceHandle } from '../../backend-api/backend.js';
import { everyTick } from '../../common/shared-ticker.js';
import { residentBytesOf } from './memory.js';

/** Milliseconds between two samples of the instances' process ids. */
export const SAMPLE_MS = 250;

export interface InstanceProcessesSnapshot {
  /** Processes replaced since the version loaded, over all its instances. */
  readonly restarts: number;
  /** The resident set (VmRSS) of the instances' processes now, summed; 0 where /proc cannot tell. */
  readonly residentBytes: number;
}

export class InstanceProcesses {
  private readonly last: (number | undefined)[];
  private restarts = 0;
  private stopTick: (() => void) | undefined;

  private constructor(private readonly instances: readonly InstanceHandle[]) {
    this.last = instances.map((i) => i.pid);
  }

  /** A watcher for the instances, or undefined when none runs in a process of its own. */
  static of(instances: readonly InstanceHandle[]): InstanceProcesses | undefined {
    if (!instances.some((i) => i.pid !== undefined)) return undefined;
    const w = new InstanceProcesses(instances);
    w.stopTick = everyTick(SAMPLE_MS, () => w.sample());
    return w;
  }

  private sample(): void {
    this.instances.forEach((instance, i) => {
      const pid = instance.pid;
      if (pid === undefined) return;
      if (this.last[i] !== undefined && this.last[i] !== pid) this.restarts++;
      this.last[i] = pid;
    });
  }

  snapshot(): InstanceProcessesSnapshot {
    this.sample();
    let residentBytes = 0;
    for (const instance of this.instances) {
      const pid = instance.pid;
      if (pid !== undefined) residentBytes += residentBytesOf(pid) ?? 0;
    }
    return { restarts: this.restarts, residentBytes };
  }

  stop(): void {
    this.stopTick?.();
    this.stopTick = undefined;
  }
}
