/**
 * Helpers for the ensemble tests: ensemble and member configs from short specs (through the real config
 * parser), member versions with scripted behaviour behind the real request validation, and a repository
 * stand-in that resolves them by name.
 */
import { NereidError, notFound } from '../../common/errors.js';
import type { Tensor } from '../../common/tensor.js';
import {
  freezeModelConfig,
  normalizeModelConfig,
  parseModelConfigText,
  validateModelConfig,
} from '../../model-config/index.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import { modelMetadataOf } from '../model/model-version.js';
import { prepareRequest } from '../inference.js';
import { ResponseStream } from '../response-stream.js';
import { ModelStats } from '../stats/model-stats.js';
import type { InferenceRequest, InferenceResponse, ModelMetadata } from '../types.js';
import type { ServableVersion, VersionLookup } from '../model/servable.js';

export interface TensorSpec {
  readonly name: string;
  /** Config datatype, TYPE_FP32 by default. */
  readonly type?: string;
  /** [4] by default. */
  readonly dims?: readonly number[];
  readonly optional?: boolean;
}

export interface StepSpec {
  readonly model: string;
  readonly version?: number;
  /** member input → ensemble tensor */
  readonly inputs: Readonly<Record<string, string>>;
  /** member output → ensemble tensor */
  readonly outputs: Readonly<Record<string, string>>;
}

export interface EnsembleSpec {
  readonly name?: string;
  readonly maxBatch?: number;
  readonly inputs: readonly (string | TensorSpec)[];
  readonly outputs: readonly (string | TensorSpec)[];
  readonly steps: readonly StepSpec[];
  readonly maxInflight?: number;
}

export interface MemberSpec {
  readonly name: string;
  readonly maxBatch?: number;
  readonly inputs: readonly (string | TensorSpec)[];
  readonly outputs: readonly (string | TensorSpec)[];
  readonly decoupled?: boolean;
}

const spec = (t: string | TensorSpec): TensorSpec => (typeof t === 'string' ? { name: t } : t);

function tensorText(t: string | TensorSpec): string {
  const s = spec(t);
  const optional = s.optional === true ? ' optional: true' : '';
  return `{ name: "${s.name}" data_type: ${s.type ?? 'TYPE_FP32'} dims: [ ${(s.dims ?? [4]).join(', ')} ]${optional} }`;
}

const mapText = (key: string, m: Readonly<Record<string, string>>): string =>
  Object.entries(m)
    .map(([k, v]) => `${key} { key: "${k}" value: "${v}" }`)
    .join(' ');

export function ensembleText(e: EnsembleSpec): string {
  const steps = e.steps
    .map(
      (s) =>
        `{ model_name: "${s.model}" model_version: ${s.version ?? -1} ${mapText('input_map', s.inputs)} ${mapText('output_map', s.outputs)} }`,
    )
    .join(',\n');
  const inflight = e.maxInflight !== undefined ? `max_inflight_requests: ${e.maxInflight}` : '';
  return `name: "${e.name ?? 'ens'}"
platform: "ensemble"
max_batch_size: ${e.maxBatch ?? 0}
input [ ${e.inputs.map(tensorText).join(', ')} ]
output [ ${e.outputs.map(tensorText).join(', ')} ]
ensemble_scheduling { ${inflight} step [ ${steps} ] }
`;
}

/** An ensemble config through the real pipeline; `validate: false` skips the config checks (planner tests). */
export function ensembleConfig(e: EnsembleSpec, options: { validate?: boolean } = {}): FrozenModelConfig {
  const c = normalizeModelConfig(parseModelConfigText(ensembleText(e), 'config.pbtxt'));
  if (options.validate !== false) validateModelConfig(c);
  return freezeModelConfig(c);
}

export function memberConfig(m: MemberSpec): FrozenModelConfig {
  const text = `name: "${m.name}"
backend: "identity"
max_batch_size: ${m.maxBatch ?? 0}
input [ ${m.inputs.map(tensorText).join(', ')} ]
output [ ${m.outputs.map(tensorText).join(', ')} ]
${m.decoupled === true ? 'model_transaction_policy { decoupled: true }' : ''}
`;
  const c = normalizeModelConfig(parseModelConfigText(text, 'config.pbtxt'), { backend: 'identity' });
  validateModelConfig(c);
  return freezeModelConfig(c);
}

export function fp32(name: string, values: readonly number[], shape?: readonly number[]): Tensor {
  return {
    name,
    datatype: 'FP32',
    shape: shape ?? [values.length],
    data: Buffer.from(new Float32Array(values).buffer),
  };
}

export function floats(t: Tensor): number[] {
  return [...new Float32Array(t.data.buffer, t.data.byteOffset, t.data.byteLength / 4)];
}

/** How a scripted member answers one request: push responses into `reply`, now or later. */
export type Behaviour = (request: InferenceRequest, reply: MemberReply) => void;

export interface MemberReply {
  send(outputs: readonly Tensor[], final?: boolean): void;
  fail(error: NereidError): void;
  /** Ends without a further response (a decoupled model's flag-only end). */
  close(): void;
}

/** A member version: real request validation (prepareRequest), scripted answers, real ModelStats. */
export class FakeMember implements ServableVersion {
  readonly modelName: string;
  readonly version: number;
  readonly metadata: ModelMetadata;
  readonly stats: ModelStats;
  readonly decoupled: boolean;
  readonly requests: InferenceRequest[] = [];
  ready = true;
  /** Requests whose stream has not ended. */
  active = 0;

  constructor(
    readonly config: FrozenModelConfig,
    public behaviour: Behaviour,
    version = 1,
  ) {
    this.modelName = config.name;
    this.version = version;
    this.metadata = modelMetadataOf(config, [String(version)]);
    this.stats = new ModelStats(this.modelName, String(version));
    this.decoupled = config.model_transaction_policy?.decoupled === true;
  }

  isReady(): boolean {
    return this.ready;
  }

  infer(request: InferenceRequest): ResponseStream<InferenceResponse> {
    const prepared = prepareRequest(this.config, request);
    this.requests.push(request);
    const stream = new ResponseStream<InferenceResponse>();
    this.active++;
    let open = true;
    const end = (): void => {
      if (open) this.active--;
      open = false;
    };
    const reply: MemberReply = {
      send: (outputs, final = true) => {
        if (!open) return;
        const wanted = new Set(prepared.outputs.map((o) => o.name));
        stream.push(
          {
            modelName: this.modelName,
            modelVersion: String(this.version),
            id: prepared.id,
            outputs: outputs.filter((t) => wanted.has(t.name)),
            parameters: {},
            final,
          },
          final,
        );
        if (final) end();
      },
      fail: (error) => {
        stream.fail(error);
        end();
      },
      close: () => {
        stream.close();
        end();
      },
    };
    this.behaviour(request, reply);
    return stream;
  }

  unload(): Promise<void> {
    this.ready = false;
    return Promise.resolve();
  }
}

/** Name → member, the way the repository's getVersion answers (NOT_FOUND when absent). */
export class FakeRepository implements VersionLookup {
  readonly versions = new Map<string, FakeMember>();

  add(member: FakeMember): FakeMember {
    this.versions.set(member.modelName, member);
    return member;
  }

  getVersion(name: string, version?: string): ServableVersion {
    const v = this.versions.get(name);
    if (!v || (version !== undefined && String(v.version) !== version)) {
      throw notFound(`Request for unknown model: '${name}' is not found`);
    }
    return v;
  }
}

/** Reads every response of a stream, or the error that ended it. */
export async function drain(
  stream: AsyncIterable<InferenceResponse>,
): Promise<{ responses: InferenceResponse[]; error?: NereidError }> {
  const responses: InferenceResponse[] = [];
  try {
    for await (const r of stream) responses.push(r);
    return { responses };
  } catch (err) {
    return { responses, error: NereidError.from(err) };
  }
}

export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets queued callbacks run. */
export async function flush(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}
