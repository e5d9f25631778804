/**
 * The core's check of each output a backend hands back, for every backend alike (issue 33): before a
 * response is built, an output the request receives must agree with itself and with its model's config.
 *
 * - Its bytes must fit its shape (a fixed-size datatype: element count × element size). A backend that
 *   breaks this would make the encoders read past its data or send a tensor its own header contradicts, so
 *   the request always fails, INTERNAL (a model's mistake, not the client's).
 * - Its datatype and shape must be the config's (the shape as the backend produces it: the reshape's shape
 *   when the config has one, the batch dimension first when the model batches; -1 matches any size).
 *   Triton's core checks only the output's name (the Python backend prunes names it was not asked for
 *   before that check) and passes a Python model's other datatype or shape through to the client; its
 *   framework backends refuse a datatype mismatch. Nereid keeps Triton's answer by default and logs a
 *   warning the first time per model version and output, as backends/output-check.ts does for names;
 *   `--strict-model-outputs=true` fails the request with INTERNAL instead.
 *
 * Names are the backends' part (output-check.ts): the core only ever looks at outputs the request asked
 * for, which the config declares.
 */
import { dataTypeInfo, fromConfigDataType, isDataType, type DataType } from '../../common/datatype.js';
import { internal, type NereidError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Tensor } from '../../common/tensor.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';

interface OutputSpec {
  readonly datatype: DataType | undefined;
  readonly configType: string;
  /** The shape the backend must produce; undefined: not checked (a shape tensor). */
  readonly shape: readonly number[] | undefined;
}

export interface OutputContractOptions {
  readonly config: FrozenModelConfig;
  readonly version: string;
  /** `--strict-model-outputs`: a datatype or shape other than the config's fails the request. */
  readonly strict: boolean;
  readonly log?: Logger;
}

const dims = (shape: readonly number[]): string => `[${shape.join(',')}]`;

function matches(expected: readonly number[], actual: readonly number[]): boolean {
  if (expected.length !== actual.length) return false;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] !== -1 && expected[i] !== actual[i]) return false;
  }
  return true;
}

/** Bytes a fixed-size tensor of this shape needs; undefined when a dimension is not a size. */
function neededBytes(shape: readonly number[], byteSize: number): number | undefined {
  let n = byteSize;
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) return undefined;
    n *= d;
    if (!Number.isSafeInteger(n)) return undefined;
  }
  return n;
}

export class OutputContract {
  private readonly specs = new Map<string, OutputSpec>();
  private readonly warned = new Set<string>();

  constructor(private readonly o: OutputContractOptions) {
    const batching = o.config.max_batch_size > 0;
    for (const out of o.config.output) {
      if (this.specs.has(out.name)) continue;
      const inner = out.reshape?.shape ?? out.dims;
      this.specs.set(out.name, {
        datatype: fromConfigDataType(out.data_type),
        configType: out.data_type,
        shape: out.is_shape_tensor ? undefined : batching ? [-1, ...inner] : [...inner],
      });
    }
  }

  /** The error to fail the request with, or undefined (all well, or a warning was logged). */
  check(t: Tensor): NereidError | undefined {
    const spec = this.specs.get(t.name);
    if (spec === undefined) return undefined;
    if (!isDataType(t.datatype)) {
      return internal(
        `${this.model()} returned output '${t.name}' with an unknown datatype '${String(t.datatype)}'`,
      );
    }
    const byteSize = dataTypeInfo(t.datatype).byteSize;
    if (byteSize > 0) {
      const needed = neededBytes(t.shape, byteSize);
      if (needed === undefined) {
        return internal(`${this.model()} returned output '${t.name}' with an invalid shape ${dims(t.shape)}`);
      }
      if (needed !== t.data.length) {
        return internal(
          `${this.model()} returned output '${t.name}' with shape ${dims(t.shape)} of ${t.datatype}, ` +
            `which needs ${needed} bytes, but holds ${t.data.length}`,
        );
      }
    }
    if (t.datatype !== spec.datatype) {
      const failure = this.mistake(
        `d:${t.name}`,
        `returned output '${t.name}' as ${t.datatype}, but its config declares ${spec.configType}`,
      );
      if (failure) return failure;
    }
    if (spec.shape !== undefined && !matches(spec.shape, t.shape)) {
      const failure = this.mistake(
        `s:${t.name}`,
        `returned output '${t.name}' with shape ${dims(t.shape)}, but its config expects ${dims(spec.shape)}`,
      );
      if (failure) return failure;
    }
    return undefined;
  }

  private model(): string {
    return `model '${this.o.config.name}' version ${this.o.version}`;
  }

  private mistake(key: string, what: string): NereidError | undefined {
    const text = `${this.model()} ${what}`;
    if (this.o.strict) return internal(`${text} (--strict-model-outputs=true)`);
    if (!this.warned.has(key)) {
      this.warned.add(key);
      this.o.log?.warn(
        `${text}; the output goes out as the model made it (as Triton's Python backend sends it). ` +
          'Warned once per model version; --strict-model-outputs=true fails such requests',
      );
    }
    return undefined;
  }
}
