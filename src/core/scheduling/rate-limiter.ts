/**
 * Triton's rate limiter (`--rate-limit=execution_count`; user_guide/rate_limiter.md, core/src/rate_limiter.cc),
 * shared by every model of a server. An instance whose group has a `rate_limiter` config may execute
 * only while the resources it lists are free; it holds them for the whole execution. Resources are per
 * device unless marked global. A resource's count is, by default, the largest count any loaded instance
 * asks for; `--rate-limit-resource=<name>:<count>[:<device>]` sets it instead (and once any is given, a
 * resource that none of them names has count 0, as in Triton, so a model needing it fails to load).
 *
 * Instances waiting for resources queue by execution count × priority (priority 0 counts as 1), lowest
 * first: an instance with priority 2 gets half the turns of one with priority 1. Only the first in that
 * order is tried, so a big claim is not starved by small ones. Instances without a rate_limiter config
 * are not limited at all.
 *
 * Synchronous and timer-free: request() grants at once when it can, release() hands freed resources on.
 */
import { internal, invalidArg } from '../../common/errors.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';

/** One `--rate-limit-resource` flag; device -1 = every device. */
export interface ResourceLimit {
  readonly name: string;
  readonly count: number;
  readonly device: number;
}

export interface ResourceClaim {
  readonly name: string;
  readonly global: boolean;
  readonly count: number;
}

/** What one model instance asks of the rate limiter. */
export interface InstanceClaim {
  readonly resources: readonly ResourceClaim[];
  readonly priority: number;
  readonly device: number;
}

/** A model version's instances with the rate limiter: one ticket per instance, in instance order. */
export interface ModelRateLimit {
  readonly tickets: readonly RateLimitTicket[];
  unregister(): void;
}

/** The claims of a config's instances, in the order the loader creates them. */
export function instanceClaimsOf(config: FrozenModelConfig): InstanceClaim[] {
  const claims: InstanceClaim[] = [];
  for (const group of config.instance_group) {
    if (group.passive) continue;
    const rl = group.rate_limiter;
    const claim: InstanceClaim = {
      resources: (rl?.resources ?? [])
        .filter((r) => r.count > 0)
        .map((r) => ({ name: r.name, global: r.global, count: r.count })),
      priority: rl?.priority ?? 0,
      // The loader places every instance on device 0 (CPU instances, and GPU ones on this CPU server).
      device: 0,
    };
    for (let i = 0; i < group.count; i++) claims.push(claim);
  }
  return claims;
}

/** 'global', or a device id as a string. */
type DeviceKey = string;
type ResourceMap = Map<DeviceKey, Map<string, number>>;

const GLOBAL: DeviceKey = 'global';

function deviceKey(r: ResourceClaim, device: number): DeviceKey {
  return r.global ? GLOBAL : String(device);
}

function mapGet(m: ResourceMap, device: DeviceKey): Map<string, number> {
  let inner = m.get(device);
  if (!inner) m.set(device, (inner = new Map<string, number>()));
  return inner;
}

export class RateLimiter {
  private readonly tickets = new Set<RateLimitTicket>();
  private limits: ResourceMap = new Map();
  private readonly allocated: ResourceMap = new Map();
  private readonly staged: RateLimitTicket[] = [];
  private sequence = 0;
  private allocating = false;

  constructor(private readonly explicit: readonly ResourceLimit[] = []) {}

  /**
   * Adds a model's instances (one claim each). Throws INVALID_ARG, changing nothing, when the resources
   * cannot all be satisfied or a resource is both global and per-device.
   */
  register(claims: readonly InstanceClaim[]): RateLimitTicket[] {
    const added = claims.map((c) => new RateLimitTicket(this, c));
    this.limits = this.computeLimits([...this.tickets, ...added]);
    for (const t of added) this.tickets.add(t);
    return added;
  }

  /**
   * Registers one model version's instances, in the order the loader creates them (instance_group order,
   * passive groups skipped, `count` per group); throws like register().
   */
  registerModel(config: FrozenModelConfig, instanceCount: number): ModelRateLimit {
    const claims = instanceClaimsOf(config);
    if (claims.length !== instanceCount) {
      throw internal(
        `model '${config.name}' has ${instanceCount} instances but its instance groups describe ${claims.length}`,
      );
    }
    const tickets = this.register(claims);
    return { tickets, unregister: () => this.unregister(tickets) };
  }

  /** Removes instances (after their model drained); their resources may shrink to the remaining needs. */
  unregister(tickets: readonly RateLimitTicket[]): void {
    for (const t of tickets) {
      if (!this.tickets.delete(t)) continue;
      this.unstage(t);
      if (t.holding) this.free(t);
    }
    // Cannot fail: fewer claims never need more than before.
    this.limits = this.computeLimits([...this.tickets]);
    this.allocate();
  }

  /** The count of each resource, per device ('global' for global resources). */
  resourceLimits(): ReadonlyMap<string, ReadonlyMap<string, number>> {
    return this.limits;
  }

  private computeLimits(tickets: readonly RateLimitTicket[]): ResourceMap {
    const needed: ResourceMap = new Map();
    const globalNames = new Set<string>();
    const deviceNames = new Set<string>();
    for (const t of tickets) {
      for (const r of t.claim.resources) {
        (r.global ? globalNames : deviceNames).add(r.name);
        const inner = mapGet(needed, deviceKey(r, t.claim.device));
        inner.set(r.name, Math.max(inner.get(r.name) ?? 0, r.count));
      }
    }
    for (const name of globalNames) {
      if (deviceNames.has(name)) {
        throw invalidArg(
          `Resource "${name}" is present as both global and device-specific resource in the model configuration.`,
        );
      }
    }
    if (this.explicit.length === 0) return needed;
    for (const [device, inner] of needed) {
      for (const [name, need] of inner) {
        let count = 0;
        for (const e of this.explicit) {
          if (e.name !== name) continue;
          // A global resource takes the largest count given for it on any device.
          if (device === GLOBAL || e.device === -1 || String(e.device) === device) {
            count = Math.max(count, e.count);
          }
        }
        if (count < need) {
          throw invalidArg(
            `Resource count for "${name}" is limited to ${count} which will prevent scheduling of one or more model instances, the minimum required count is ${need}`,
          );
        }
        inner.set(name, count);
      }
    }
    return needed;
  }

  /** @internal */
  stage(ticket: RateLimitTicket): void {
    ticket.seq = this.sequence++;
    this.staged.push(ticket);
    this.allocate();
  }

  /** @internal */
  unstage(ticket: RateLimitTicket): void {
    const i = this.staged.indexOf(ticket);
    if (i >= 0) this.staged.splice(i, 1);
  }

  /** @internal */
  free(ticket: RateLimitTicket): void {
    ticket.holding = false;
    for (const r of ticket.claim.resources) {
      const inner = mapGet(this.allocated, deviceKey(r, ticket.claim.device));
      inner.set(r.name, (inner.get(r.name) ?? 0) - r.count);
    }
    this.allocate();
  }

  private fits(ticket: RateLimitTicket): boolean {
    for (const r of ticket.claim.resources) {
      const device = deviceKey(r, ticket.claim.device);
      const limit = this.limits.get(device)?.get(r.name) ?? 0;
      const used = this.allocated.get(device)?.get(r.name) ?? 0;
      if (used + r.count > limit) return false;
    }
    return true;
  }

  /** Grants staged tickets in priority order while the first one fits. */
  private allocate(): void {
    if (this.allocating) return;
    this.allocating = true;
    try {
      for (;;) {
        let best = -1;
        for (let i = 0; i < this.staged.length; i++) {
          if (best < 0 || before(this.staged[i], this.staged[best])) best = i;
        }
        if (best < 0) return;
        const ticket = this.staged[best];
        if (!this.fits(ticket)) return;
        this.staged.splice(best, 1);
        for (const r of ticket.claim.resources) {
          const inner = mapGet(this.allocated, deviceKey(r, ticket.claim.device));
          inner.set(r.name, (inner.get(r.name) ?? 0) + r.count);
        }
        ticket.holding = true;
        ticket.grant();
      }
    } finally {
      this.allocating = false;
    }
  }
}

function scaledPriority(t: RateLimitTicket): number {
  return t.executions * Math.max(1, t.claim.priority);
}

function before(a: RateLimitTicket, b: RateLimitTicket): boolean {
  const pa = scaledPriority(a);
  const pb = scaledPriority(b);
  return pa < pb || (pa === pb && a.seq < b.seq);
}

/** One instance's standing with the rate limiter. */
export class RateLimitTicket {
  /** Executions so far (the priority weighting counts them). */
  executions = 0;
  /** @internal */
  seq = 0;
  /** @internal */
  holding = false;
  private onGrant: (() => void) | undefined;

  constructor(
    private readonly limiter: RateLimiter,
    readonly claim: InstanceClaim,
  ) {}

  /** True when the instance needs nothing from the limiter. */
  get unlimited(): boolean {
    return this.claim.resources.length === 0;
  }

  /**
   * Asks to execute: `onGrant` runs (possibly before this returns) once the resources are held. At most
   * one request per ticket is outstanding.
   */
  request(onGrant: () => void): void {
    if (this.onGrant || this.holding) throw new Error('rate limiter ticket already requested');
    this.onGrant = onGrant;
    if (this.unlimited) {
      this.holding = true;
      this.grant();
      return;
    }
    this.limiter.stage(this);
  }

  /** Withdraws a request that has not been granted yet. */
  cancel(): void {
    if (!this.onGrant) return;
    this.onGrant = undefined;
    this.limiter.unstage(this);
  }

  /** Gives the resources back; `executed` counts a turn for the priority weighting. */
  release(executed: boolean): void {
    if (!this.holding) return;
    if (executed) this.executions++;
    if (this.unlimited) {
      this.holding = false;
      return;
    }
    this.limiter.free(this);
  }

  /** @internal */
  grant(): void {
    const cb = this.onGrant;
    this.onGrant = undefined;
    cb?.();
  }
}
