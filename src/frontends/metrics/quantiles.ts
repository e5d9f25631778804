/**
 * Sliding-window quantile estimates for the latency summaries, like prometheus-cpp's Summary (which Triton
 * uses): a targeted-quantiles CKMS stream (Cormode, Korn, Muthukrishnan, Srivastava) honours each
 * quantile's allowed rank error, and a ring of such streams (60 s window, 5 age buckets by default) lets
 * old observations fall out. Memory stays small however many requests are observed.
 */

export interface QuantileTarget {
  /** 0..1, e.g. 0.99 */
  readonly quantile: number;
  /** Allowed rank error, e.g. 0.001 */
  readonly error: number;
}

interface Sample {
  value: number;
  /** Rank width: how many observations this sample stands for. */
  g: number;
  /** Rank uncertainty. */
  delta: number;
}

const BUFFER_SIZE = 500;

export class CkmsQuantiles {
  private samples: Sample[] = [];
  private readonly buffer: number[] = [];
  private n = 0;

  constructor(private readonly targets: readonly QuantileTarget[]) {}

  insert(value: number): void {
    this.buffer.push(value);
    if (this.buffer.length >= BUFFER_SIZE) this.flush();
  }

  /** The estimate for quantile `q` (NaN when nothing was observed). */
  get(q: number): number {
    this.flush();
    const l = this.samples;
    if (l.length === 0) return NaN;
    let t = Math.ceil(q * this.n);
    t += Math.ceil(this.allowableError(t) / 2);
    let p = l[0];
    let r = 0;
    for (let i = 1; i < l.length; i++) {
      const c = l[i];
      r += p.g;
      if (r + c.g + c.delta > t) return p.value;
      p = c;
    }
    return p.value;
  }

  get count(): number {
    return this.n + this.buffer.length;
  }

  reset(): void {
    this.samples = [];
    this.buffer.length = 0;
    this.n = 0;
  }

  /** The rank error allowed at rank `r` (the minimum over the targets). */
  private allowableError(r: number): number {
    let m = Number.MAX_VALUE;
    for (const { quantile: q, error: e } of this.targets) {
      const f = q * this.n <= r ? (2 * e * r) / q : (2 * e * (this.n - r)) / (1 - q);
      if (f < m) m = f;
    }
    return m;
  }

  private flush(): void {
    if (this.buffer.length === 0) return;
    this.buffer.sort((a, b) => a - b);
    const old = this.samples;
    const out: Sample[] = [];
    let i = 0;
    let r = 0;
    for (const v of this.buffer) {
      while (i < old.length && old[i].value <= v) {
        r += old[i].g;
        out.push(old[i++]);
      }
      // A new minimum or maximum is known exactly; anything in between inherits the allowed error.
      const delta =
        out.length === 0 || i === old.length ? 0 : Math.max(0, Math.floor(this.allowableError(r)) - 1);
      out.push({ value: v, g: 1, delta });
      this.n++;
      r++;
    }
    while (i < old.length) out.push(old[i++]);
    this.buffer.length = 0;
    this.samples = out;
    this.compress();
  }

  private compress(): void {
    const l = this.samples;
    if (l.length < 2) return;
    const kept: Sample[] = [];
    let x: Sample = { ...l[l.length - 1] };
    let r = this.n - 1 - x.g;
    for (let i = l.length - 2; i >= 0; i--) {
      const c = l[i];
      if (c.g + x.g + x.delta <= this.allowableError(r)) {
        x.g += c.g;
      } else {
        kept.push(x);
        x = { ...c };
      }
      r -= c.g;
    }
    kept.push(x);
    kept.reverse();
    this.samples = kept;
  }
}

/** Quantiles over the last `maxAgeMs`, kept in `ageBuckets` rotating streams. */
export class TimeWindowQuantiles {
  private readonly ring: CkmsQuantiles[];
  private current = 0;
  private lastRotation: number;
  private readonly rotateEveryMs: number;

  constructor(
    targets: readonly QuantileTarget[],
    maxAgeMs = 60_000,
    ageBuckets = 5,
    private readonly now: () => number = Date.now,
  ) {
    this.ring = Array.from({ length: Math.max(1, ageBuckets) }, () => new CkmsQuantiles(targets));
    this.rotateEveryMs = maxAgeMs / this.ring.length;
    this.lastRotation = now();
  }

  insert(value: number): void {
    this.rotate();
    for (const s of this.ring) s.insert(value);
  }

  get(q: number): number {
    return this.rotate().get(q);
  }

  private rotate(): CkmsQuantiles {
    let elapsed = this.now() - this.lastRotation;
    if (elapsed > this.rotateEveryMs * this.ring.length * 2) {
      // Idle for more than the whole window: everything is stale, skip the step-by-step catch-up.
      for (const s of this.ring) s.reset();
      this.lastRotation = this.now();
      return this.ring[this.current];
    }
    while (elapsed > this.rotateEveryMs) {
      this.ring[this.current].reset();
      this.current = (this.current + 1) % this.ring.length;
      elapsed -= this.rotateEveryMs;
      this.lastRotation += this.rotateEveryMs;
    }
    return this.ring[this.current];
  }
}
