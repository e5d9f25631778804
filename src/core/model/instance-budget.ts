/**
 * How many model instances the server may run: per model and in total, with tighter limits for instances
 * that are whole OS processes (Python stubs). Every instance costs a thread or a process and its memory
 * (measured: ~13 MB per onnxruntime worker, ~18 MB per JavaScript worker, ~35 MB per Python stub before
 * the model loads anything), so a config asking for `count: 1000000` must be refused before one of them
 * starts, never discovered by the kernel's OOM killer.
 *
 * The loader checks a whole load first (admit: every version the policy selects, before any loads) and
 * then reserves each version's instances synchronously just before creating them (reserve); the lease is
 * released once the version's instances are closed. Instances of every loaded version count, so while a
 * reload swaps versions the old and the new ones both count, as both run.
 */
import os from 'node:os';
import { invalidArg } from '../../common/errors.js';

export interface InstanceLimits {
  /** Instances one model may have across the versions it loads (`--max-instances-per-model`). */
  readonly perModel: number;
  /** Instances of every loaded model together (`--max-instances`). */
  readonly total: number;
  /** Process-backed instances (Python stubs) one model may have (`--max-process-instances-per-model`). */
  readonly processPerModel: number;
  /** Process-backed instances of every loaded model together (`--max-process-instances`). */
  readonly processTotal: number;
}

const MIB = 1024 * 1024;

/** Memory this server may use: the cgroup limit when there is one, else the machine's. */
export function availableMemoryBytes(): number {
  const total = os.totalmem();
  const constrained =
    typeof process.constrainedMemory === 'function' ? (process.constrainedMemory() ?? 0) : 0;
  return constrained > 0 && constrained < total ? constrained : total;
}

/**
 * The defaults, and why: more instances of one model than a few per core buys no throughput for a
 * CPU-bound model and little for an I/O-bound one, so per model it is 4 per core (at least 32); a
 * process per instance is heavier, so 2 per core (at least 16). The server-wide totals guard memory
 * (many models, or many loads of override models) and scale with it: one instance per 32 MiB (at least
 * 128), one stub process per 128 MiB (at least 64) — about a third of memory at the measured baseline
 * cost before a model's own weights.
 */
export function defaultInstanceLimits(
  cpus: number = os.availableParallelism(),
  memoryBytes: number = availableMemoryBytes(),
): InstanceLimits {
  return {
    perModel: Math.max(32, 4 * cpus),
    total: Math.max(128, Math.floor(memoryBytes / (32 * MIB))),
    processPerModel: Math.max(16, 2 * cpus),
    processTotal: Math.max(64, Math.floor(memoryBytes / (128 * MIB))),
  };
}

/** One version's reserved instances; release() (idempotent) gives them back. */
export interface InstanceLease {
  release(): void;
}

export class InstanceBudget {
  private used = 0;
  private usedProcesses = 0;

  constructor(readonly limits: InstanceLimits = defaultInstanceLimits()) {}

  /** Instances (and process-backed ones) currently reserved by loaded or loading versions. */
  get inUse(): { readonly instances: number; readonly processes: number } {
    return { instances: this.used, processes: this.usedProcesses };
  }

  /**
   * Checks a whole load before anything starts: `perVersion` instances for each of `versions` versions.
   * Throws INVALID_ARG naming the limit and its flag. Reserves nothing (reserve() does, per version).
   */
  admit(model: string, perVersion: number, versions: number, processBacked: boolean): void {
    const want = perVersion * Math.max(1, versions);
    const spread = versions > 1 ? ` (${perVersion} for each of ${versions} versions)` : '';
    this.check(model, want, spread, processBacked);
  }

  /** Reserves one version's instances, or throws INVALID_ARG. Synchronous: no other load interleaves. */
  reserve(model: string, count: number, processBacked: boolean): InstanceLease {
    this.check(model, count, '', processBacked);
    this.used += count;
    if (processBacked) this.usedProcesses += count;
    let held = true;
    return {
      release: (): void => {
        if (!held) return;
        held = false;
        this.used -= count;
        if (processBacked) this.usedProcesses -= count;
      },
    };
  }

  private check(model: string, want: number, spread: string, processBacked: boolean): void {
    const { limits } = this;
    const refuse = (what: string): never => {
      throw invalidArg(`model '${model}' asks for ${want} instances${spread}: ${what}`);
    };
    if (want > limits.perModel) {
      refuse(`a model may have at most ${limits.perModel} (--max-instances-per-model)`);
    }
    if (processBacked && want > limits.processPerModel) {
      refuse(
        `a model whose instances are processes may have at most ${limits.processPerModel} (--max-process-instances-per-model)`,
      );
    }
    if (this.used + want > limits.total) {
      refuse(
        `the server runs ${this.used} of at most ${limits.total} instances (--max-instances); unload a model first`,
      );
    }
    if (processBacked && this.usedProcesses + want > limits.processTotal) {
      refuse(
        `the server runs ${this.usedProcesses} of at most ${limits.processTotal} instance processes (--max-process-instances); unload a model first`,
      );
    }
  }
}

/** Instances one version of a model starts: every non-passive instance_group's count. */
export function instancesPerVersion(groups: readonly { count: number; passive?: boolean }[]): number {
  let n = 0;
  for (const g of groups) if (!g.passive) n += g.count;
  return n;
}
