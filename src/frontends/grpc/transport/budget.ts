/**
 * Byte budgets for request data the gRPC frontend holds before a handler owns it: the bytes of messages
 * still arriving (framing.ts) and the output of a decompression in progress. One budget per connection,
 * each drawing on one budget for the whole server, so neither many streams on one connection nor many
 * connections can make the server hold more than the operator allowed. A message's bytes are released the
 * moment the message is complete and handed on (from then on they belong to the request), or when its
 * call ends without completing it.
 */

export class ByteBudget {
  private used = 0;

  constructor(
    /** Most bytes held at once; Infinity for no limit. */
    readonly limit: number,
    private readonly parent?: ByteBudget,
    /** Whose budget this is, for the error a refused call gets ("this connection", "the server"). */
    private readonly owner = 'the server',
    /** The setting that raises the limit, named in that error. */
    private readonly setting = '',
  ) {}

  /** The RESOURCE_EXHAUSTED text for a call this budget refused. */
  exhaustedMessage(): string {
    const raise = this.setting === '' ? '' : ` (${this.setting})`;
    return `request messages still arriving on ${this.owner} would exceed its limit of ${this.limit} buffered bytes${raise}`;
  }

  /** Bytes currently held (tests, diagnostics). */
  get held(): number {
    return this.used;
  }

  /**
   * Takes `n` bytes if this budget and every parent have room, else takes nothing and returns which
   * budget refused (for the error message).
   */
  reserve(n: number): ByteBudget | undefined {
    if (this.used + n > this.limit) return this;
    const refused = this.parent?.reserve(n);
    if (refused !== undefined) return refused;
    this.used += n;
    return undefined;
  }

  release(n: number): void {
    if (n <= 0) return;
    this.used -= n;
    this.parent?.release(n);
  }
}

/** A ticket on a budget: what one reader holds, so it can give all of it back at once. */
export class Reservation {
  private bytes = 0;

  constructor(private readonly budget: ByteBudget | undefined) {}

  get held(): number {
    return this.bytes;
  }

  /** Takes `n` more bytes; the refusing budget when there is no room (nothing is taken then). */
  take(n: number): ByteBudget | undefined {
    if (this.budget === undefined || n === 0) return undefined;
    const refused = this.budget.reserve(n);
    if (refused === undefined) this.bytes += n;
    return refused;
  }

  /** Gives `n` of the bytes taken back. */
  release(n: number): void {
    const give = Math.min(n, this.bytes);
    if (this.budget !== undefined) this.budget.release(give);
    this.bytes -= give;
  }

  /** Gives every byte back. */
  releaseAll(): void {
    if (this.budget !== undefined) this.budget.release(this.bytes);
    this.bytes = 0;
  }
}
