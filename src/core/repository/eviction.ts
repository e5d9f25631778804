/**
 * The eviction policy of on-demand mode, as a pure function: given the loaded models (their cost, when
 * each was last used, whether it may go) and the limits, which models to unload so that one more model
 * fits. Least recently used first; busy and pinned models never. Tested with tables (eviction.test.ts).
 */

export interface Resident {
  readonly name: string;
  /** Measured resident bytes (core/model/memory.ts). */
  readonly bytes: number;
  /** A monotonic use counter: lower = used longer ago. */
  readonly lastUsed: number;
  /** Requests in flight or holds, a busy ensemble or BLS caller using it, a load or unload running. */
  readonly busy: boolean;
  /** --load-model at start or `nereid.pinned` in its config. */
  readonly pinned: boolean;
}

export interface Limits {
  /** --max-loaded-models; 0 = no limit. */
  readonly maxModels: number;
  /** --model-memory-budget in bytes; 0 = no budget. */
  readonly budgetBytes: number;
}

export type EvictionPlan =
  | { readonly fits: true; readonly victims: readonly string[] }
  | { readonly fits: false; readonly reason: string };

/**
 * The models to unload before a model costing `incomingBytes` (an estimate) loads beside `residents`,
 * with `reserved` further loads already admitted (they count one slot each, their cost already in
 * `reservedBytes`). Victims are taken oldest use first until both limits hold; if even every evictable
 * model would not make room, nothing is evicted and the reason says why.
 */
export function planEviction(
  residents: readonly Resident[],
  limits: Limits,
  incomingBytes: number,
  reserved = 0,
  reservedBytes = 0,
): EvictionPlan {
  let count = residents.length + reserved + 1;
  let bytes = residents.reduce((s, r) => s + r.bytes, 0) + reservedBytes + incomingBytes;
  const over = (): boolean =>
    (limits.maxModels > 0 && count > limits.maxModels) ||
    (limits.budgetBytes > 0 && bytes > limits.budgetBytes && count > 1);
  if (!over()) return { fits: true, victims: [] };
  const candidates = residents
    .filter((r) => !r.busy && !r.pinned)
    .sort((a, b) => a.lastUsed - b.lastUsed || (a.name < b.name ? -1 : 1));
  const victims: string[] = [];
  for (const c of candidates) {
    if (!over()) break;
    victims.push(c.name);
    count--;
    bytes -= c.bytes;
  }
  if (!over()) return { fits: true, victims };
  const busy = residents.filter((r) => r.busy).length;
  const pinned = residents.filter((r) => r.pinned).length;
  const used = residents.reduce((s, r) => s + r.bytes, 0) + reservedBytes;
  const byCount = limits.maxModels > 0 && count > limits.maxModels;
  const limit = byCount
    ? `${residents.length} model(s) loaded and ${reserved} loading (--max-loaded-models=${limits.maxModels})`
    : `${residents.length} model(s) loaded and ${reserved} loading use ${formatBytes(used)} of the ${formatBytes(limits.budgetBytes)} budget (--model-memory-budget), this one needs about ${formatBytes(incomingBytes)}`;
  return {
    fits: false,
    reason: `${limit}, and none can be unloaded to make room: ${busy} busy, ${pinned} pinned`,
  };
}

/** Bytes as a short text: 1.5 GiB, 12.0 MiB, 512 B. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

/**
 * A size as --model-memory-budget takes it: bytes (`1048576`), or a number with a unit, decimal (`512MB`,
 * `2GB`, `1.5GB`, `KB`) or binary (`512MiB`, `2GiB`, `KiB`), case-insensitive; undefined when it is not one.
 */
export function parseSize(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$/i.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = (m[2] ?? 'b').toLowerCase();
  const powers: Record<string, number> = { b: 0, k: 1, m: 2, g: 3, t: 4 };
  const p = powers[unit[0]];
  if (p === undefined) return undefined;
  const base = unit.includes('i') ? 1024 : 1000;
  const bytes = Math.round(n * base ** p);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
