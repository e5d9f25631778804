/**
 * Silent mistakes in what a JavaScript or Python model returns, caught per response: an output whose name
 * the config does not declare (the core drops it, so the client never sees it and nothing said why), and,
 * for a model that answers each request once (not decoupled, whose responses may carry any subset), a
 * requested output missing from the response.
 *
 * By default each mistake is a warning, logged the first time per model version and output name. With
 * `--strict-model-outputs=true` the request fails instead, with INTERNAL (HTTP 500): the client asked for
 * nothing wrong, the model broke its own config, which is how Triton reports a model's mistakes (a wrong
 * return from a Python execute is INTERNAL too).
 */
import { internal, type NereidError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { ModelLoadContext } from '../backend-api/backend.js';

export interface OutputCheckOptions {
  readonly model: string;
  readonly version: number;
  /** Output names the config declares. */
  readonly declared: ReadonlySet<string>;
  /** Responses of a decoupled model are not checked for missing outputs. */
  readonly decoupled: boolean;
  /** `--strict-model-outputs`: fail the request instead of warning. */
  readonly strict: boolean;
  readonly log: Logger;
}

const list = (names: Iterable<string>): string => [...names].map((n) => `'${n}'`).join(', ') || 'none';

export class OutputCheck {
  private readonly warned = new Set<string>();

  constructor(private readonly o: OutputCheckOptions) {}

  /** The check for the model version a backend is loading: its declared outputs, mode and strictness. */
  static forModel(ctx: ModelLoadContext): OutputCheck {
    return new OutputCheck({
      model: ctx.modelName,
      version: ctx.version,
      declared: new Set(ctx.config.output.map((o) => o.name)),
      decoupled: ctx.config.model_transaction_policy?.decoupled === true,
      strict: ctx.strictModelOutputs === true,
      log: ctx.log,
    });
  }

  /**
   * Checks one response's output names; returns the error to fail the request with (strict mode) or
   * undefined (all well, or a warning was logged).
   */
  check(
    outputs: readonly { readonly name: string }[],
    undeclared: readonly unknown[] | undefined,
    requested: ReadonlySet<string>,
  ): NereidError | undefined {
    for (const t of outputs) {
      if (this.o.declared.has(t.name)) continue;
      const failure = this.undeclared(t.name);
      if (failure) return failure;
    }
    if (undeclared) {
      for (const name of undeclared) {
        const failure = this.undeclared(String(name));
        if (failure) return failure;
      }
    }
    if (this.o.decoupled || requested.size === 0) return undefined;
    // The usual case (every requested output present) costs one pass and no allocation.
    let present = 0;
    for (const t of outputs) if (requested.has(t.name)) present++;
    if (present >= requested.size) return undefined;
    for (const name of requested) {
      if (outputs.some((t) => t.name === name)) continue;
      const what = `returned no output '${name}', which the request asked for`;
      const failure = this.mistake(`m:${name}`, what, 'the response goes out without it');
      if (failure) return failure;
    }
    return undefined;
  }

  private undeclared(name: string): NereidError | undefined {
    const what = `returned output '${name}', which its config does not declare (declared: ${list(this.o.declared)})`;
    return this.mistake(`u:${name}`, what, 'the output is dropped');
  }

  private mistake(key: string, what: string, consequence: string): NereidError | undefined {
    const text = `model '${this.o.model}' version ${this.o.version} ${what}`;
    if (this.o.strict) return internal(`${text} (--strict-model-outputs=true)`);
    if (!this.warned.has(key)) {
      this.warned.add(key);
      this.o.log.warn(
        `${text}; ${consequence}. Warned once per model version; --strict-model-outputs=true fails such requests`,
      );
    }
    return undefined;
  }
}
