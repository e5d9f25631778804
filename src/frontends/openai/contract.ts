/**
 * The model contract of Triton's OpenAI frontend, both ways. A generation model takes a BYTES
 * `text_input` and optionally `stream` (BOOL), and either one JSON `sampling_parameters` (BYTES; Triton's
 * vLLM format: max_tokens, temperature, top_p, stop, seed, ...) or one tensor per parameter (Triton's
 * TensorRT-LLM / Python format: `max_tokens`, `temperature`, `top_p`, `stop` or `stop_words`, `seed`,
 * `frequency_penalty`, `presence_penalty`), plus `exclude_input_in_output` and
 * `return_num_input_tokens` / `return_num_output_tokens` when it declares them. Only inputs the model
 * declares are sent, each with the datatype and shape (every -1 as 1, a list's last -1 as its length) the
 * model's metadata gives, so the same models Triton's frontend serves work unchanged; a required input
 * this contract cannot fill is a 400 naming it. It answers a BYTES `text_output` and optionally
 * `num_input_tokens` / `num_output_tokens` (integers), which make the `usage` counts.
 *
 * Structured output (`response_format`, tool_choice `required` / a named function) travels as vLLM's
 * `guided_decoding` in `sampling_parameters`, log probs as vLLM's `logprobs` there with a BYTES `logprobs`
 * output coming back: only a model on a backend that honours them (GUIDED_BACKENDS; today `llamacpp`)
 * is sent them, any other model gets a 400 saying so rather than an answer that ignores them.
 *
 * An embedding model takes one BYTES input and answers an FP32 output: the embedding of that string.
 */
import type { DataType } from '../../common/datatype.js';
import { joinBytesElements, splitBytesElements } from '../../common/tensor.js';
import type {
  CallContext,
  DecodedRequest,
  InferenceResponse,
  InferInput,
  ResolvedModel,
  TensorMetadata,
} from '../../core/index.js';
import { badRequest } from './errors.js';
import type { GenerationOptions } from './request.js';

/** What the frontend needs to know of a model's config JSON. */
export interface ModelFacts {
  readonly name: string;
  readonly inputs: readonly TensorMetadata[];
  readonly outputs: readonly TensorMetadata[];
  /** Inputs the config marks `optional: true`. */
  readonly optionalInputs: ReadonlySet<string>;
  readonly decoupled: boolean;
  /** The config's `backend` ('' when it names a platform instead). */
  readonly backend: string;
  /** The request's handle on the model (resolved once): runs the request on that version. */
  readonly model: ResolvedModel;
}

/** The request an OpenAI route runs on its model (the default version; no id, outputs or parameters). */
export function openAiRequest(facts: ModelFacts, inputs: readonly InferInput[]): DecodedRequest {
  return {
    modelName: facts.name,
    modelVersion: undefined,
    id: undefined,
    inputs,
    outputs: undefined,
    parameters: undefined,
  };
}

/** An OpenAI route's call context: cancelled by its signal, not traced, logged or forwarded. */
export function openAiCall(signal: AbortSignal): CallContext {
  return { signal, trace: undefined, timings: undefined, forwarded: undefined };
}

type Scalar = number | bigint | boolean | string;

function encode(datatype: DataType, values: readonly Scalar[], name: string): Buffer {
  if (datatype === 'BYTES') return joinBytesElements(values.map((v) => String(v)));
  const n = values.length;
  const num = (v: Scalar): number => (typeof v === 'boolean' ? Number(v) : Number(v));
  const big = (v: Scalar): bigint => BigInt(typeof v === 'boolean' ? Number(v) : Math.trunc(Number(v)));
  switch (datatype) {
    case 'BOOL':
      return Buffer.from(values.map((v) => (v === true || v === 1 ? 1 : 0)));
    case 'INT32': {
      const b = Buffer.alloc(4 * n);
      values.forEach((v, i) => b.writeInt32LE(Math.trunc(num(v)), 4 * i));
      return b;
    }
    case 'UINT32': {
      const b = Buffer.alloc(4 * n);
      values.forEach((v, i) => b.writeUInt32LE(Math.trunc(num(v)) >>> 0, 4 * i));
      return b;
    }
    case 'INT64': {
      const b = Buffer.alloc(8 * n);
      values.forEach((v, i) => b.writeBigInt64LE(big(v), 8 * i));
      return b;
    }
    case 'UINT64': {
      const b = Buffer.alloc(8 * n);
      values.forEach((v, i) => b.writeBigUInt64LE(BigInt.asUintN(64, big(v)), 8 * i));
      return b;
    }
    case 'FP32': {
      const b = Buffer.alloc(4 * n);
      values.forEach((v, i) => b.writeFloatLE(num(v), 4 * i));
      return b;
    }
    case 'FP64': {
      const b = Buffer.alloc(8 * n);
      values.forEach((v, i) => b.writeDoubleLE(num(v), 8 * i));
      return b;
    }
    default:
      throw badRequest(`model input '${name}' has datatype ${datatype}, which this contract cannot fill`);
  }
}

/** The shape for `count` elements: every -1 is 1 except the last, which takes the count. */
function shapeFor(meta: TensorMetadata, count: number): number[] {
  const shape = meta.shape.map((d) => (d < 0 ? 1 : d));
  const last = meta.shape.lastIndexOf(-1);
  if (count !== 1) {
    if (last < 0)
      throw badRequest(`model input '${meta.name}' has a fixed shape and cannot take ${count} values`);
    shape[last] = count;
  }
  const total = shape.reduce((a, b) => a * b, 1);
  if (total !== count) {
    throw badRequest(
      `model input '${meta.name}' has shape [${meta.shape.join(',')}], which does not fit ${count} value(s)`,
    );
  }
  return shape;
}

function tensor(meta: TensorMetadata, values: readonly Scalar[]): InferInput {
  return {
    name: meta.name,
    datatype: meta.datatype,
    shape: shapeFor(meta, values.length),
    data: encode(meta.datatype, values, meta.name),
  };
}

/** Reasons a model cannot serve generation, or undefined. */
export function generationProblem(facts: ModelFacts): string | undefined {
  const input = facts.inputs.find((i) => i.name === 'text_input');
  if (input?.datatype !== 'BYTES') {
    return `model '${facts.name}' does not serve text generation: it has no BYTES input 'text_input'`;
  }
  const output = facts.outputs.find((o) => o.name === 'text_output');
  if (output?.datatype !== 'BYTES') {
    return `model '${facts.name}' does not serve text generation: it has no BYTES output 'text_output'`;
  }
  return undefined;
}

/** Backends that read `guided_decoding` and `logprobs` from `sampling_parameters`. */
export const GUIDED_BACKENDS: ReadonlySet<string> = new Set(['llamacpp']);

/** A 400 when the request asks for structured output or log probs the model cannot give. */
export function checkFeatures(facts: ModelFacts, options: GenerationOptions, what: string): void {
  if (options.guided === undefined && options.logprobs === undefined) return;
  const param = options.guided !== undefined ? what : 'logprobs';
  const asked = options.guided !== undefined ? what : 'logprobs';
  const on = facts.backend === '' ? 'its platform' : `backend '${facts.backend}'`;
  if (!GUIDED_BACKENDS.has(facts.backend) || !facts.inputs.some((i) => i.name === 'sampling_parameters')) {
    throw badRequest(
      `model '${facts.name}' (${on}) cannot honour ${asked}: it needs a llamacpp model (docs/openai.md)`,
      param,
    );
  }
  if (options.logprobs !== undefined && !facts.outputs.some((o) => o.name === 'logprobs')) {
    throw badRequest(
      `model '${facts.name}' declares no 'logprobs' output, so it cannot return logprobs`,
      'logprobs',
    );
  }
}

/** The inference inputs for one generation request. */
export function generationInputs(
  facts: ModelFacts,
  prompt: string,
  options: GenerationOptions,
  defaults: { maxTokens: number; echo?: boolean },
): InferInput[] {
  const problem = generationProblem(facts);
  if (problem !== undefined) throw badRequest(problem, 'model');
  const byName = new Map(facts.inputs.map((i) => [i.name, i]));
  const inputs: InferInput[] = [];
  const filled = new Set<string>();
  const put = (name: string, values: readonly Scalar[]): void => {
    const meta = byName.get(name);
    if (meta === undefined) return;
    inputs.push(tensor(meta, values));
    filled.add(name);
  };
  const maxTokens = options.maxTokens ?? defaults.maxTokens;
  put('text_input', [prompt]);
  // A non-decoupled model answers once: asking it to stream would only make it fail (as Triton's
  // mock_llm does), so `stream` follows what the model can do, and the frontend chunks the one answer.
  put('stream', [options.stream && facts.decoupled]);
  if (byName.has('sampling_parameters')) {
    const sampling: Record<string, unknown> = { ...options.extra, max_tokens: maxTokens };
    if (options.temperature !== undefined) sampling.temperature = options.temperature;
    if (options.topP !== undefined) sampling.top_p = options.topP;
    if (options.seed !== undefined) sampling.seed = options.seed;
    if (options.frequencyPenalty !== undefined) sampling.frequency_penalty = options.frequencyPenalty;
    if (options.presencePenalty !== undefined) sampling.presence_penalty = options.presencePenalty;
    if (options.stop.length > 0) sampling.stop = options.stop;
    if (options.guided !== undefined) sampling.guided_decoding = options.guided;
    if (options.logprobs !== undefined) sampling.logprobs = options.logprobs;
    put('sampling_parameters', [JSON.stringify(sampling)]);
  }
  put('max_tokens', [maxTokens]);
  if (options.temperature !== undefined) put('temperature', [options.temperature]);
  if (options.topP !== undefined) put('top_p', [options.topP]);
  if (options.seed !== undefined) put('seed', [options.seed]);
  if (options.frequencyPenalty !== undefined) put('frequency_penalty', [options.frequencyPenalty]);
  if (options.presencePenalty !== undefined) put('presence_penalty', [options.presencePenalty]);
  if (options.stop.length > 0) {
    put('stop', options.stop);
    if (!filled.has('stop')) put('stop_words', options.stop);
  }
  if (defaults.echo !== undefined) {
    put('exclude_input_in_output', [!defaults.echo]);
    put('sampling_param_exclude_input_from_output', [!defaults.echo]);
  }
  put('return_num_input_tokens', [true]);
  put('return_num_output_tokens', [true]);
  const missing = facts.inputs.filter((i) => !filled.has(i.name) && !facts.optionalInputs.has(i.name));
  if (missing.length > 0) {
    throw badRequest(
      `model '${facts.name}' requires input(s) ${missing.map((m) => `'${m.name}'`).join(', ')}, which an OpenAI request cannot fill`,
      'model',
    );
  }
  return inputs;
}

/** Whether the model fills `exclude_input_in_output` itself (else the frontend echoes the prompt). */
export function modelHandlesEcho(facts: ModelFacts): boolean {
  return facts.inputs.some(
    (i) => i.name === 'exclude_input_in_output' || i.name === 'sampling_param_exclude_input_from_output',
  );
}

export interface GenerationPiece {
  /** text_output's bytes (every element, in order): the caller decodes them across responses. */
  readonly bytes: Buffer;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  /** The `logprobs` output's JSON text, when the model sent one. */
  readonly logprobs?: string;
}

function firstInteger(r: InferenceResponse, name: string): number | undefined {
  const t = r.outputs.find((o) => o.name === name);
  if (t === undefined || t.data.length === 0) return undefined;
  switch (t.datatype) {
    case 'INT32':
      return t.data.length >= 4 ? t.data.readInt32LE(0) : undefined;
    case 'UINT32':
      return t.data.length >= 4 ? t.data.readUInt32LE(0) : undefined;
    case 'INT64':
      return t.data.length >= 8 ? Number(t.data.readBigInt64LE(0)) : undefined;
    case 'UINT64':
      return t.data.length >= 8 ? Number(t.data.readBigUInt64LE(0)) : undefined;
    default:
      return undefined;
  }
}

export function readGeneration(r: InferenceResponse): GenerationPiece {
  const out = r.outputs.find((o) => o.name === 'text_output');
  const bytes =
    out === undefined || out.datatype !== 'BYTES'
      ? Buffer.alloc(0)
      : Buffer.concat(splitBytesElements(out.data));
  const inputTokens = firstInteger(r, 'num_input_tokens');
  const outputTokens = firstInteger(r, 'num_output_tokens');
  const lp = r.outputs.find((o) => o.name === 'logprobs');
  const logprobs =
    lp !== undefined && lp.datatype === 'BYTES'
      ? Buffer.concat(splitBytesElements(lp.data)).toString('utf8')
      : undefined;
  return {
    bytes,
    ...(logprobs !== undefined && { logprobs }),
    ...(inputTokens !== undefined && { inputTokens }),
    ...(outputTokens !== undefined && { outputTokens }),
  };
}

/** The embedding model's string input and FP32 output, or a reason it is not one. */
export function embeddingContract(facts: ModelFacts): { input: TensorMetadata; output: TensorMetadata } {
  const strings = facts.inputs.filter((i) => i.datatype === 'BYTES');
  const required = facts.inputs.filter((i) => !facts.optionalInputs.has(i.name));
  const input =
    strings.find((i) => i.name === 'text_input') ?? (strings.length === 1 ? strings[0] : undefined);
  const output = facts.outputs.find((o) => o.datatype === 'FP32');
  if (input === undefined || output === undefined || required.some((r) => r !== input)) {
    throw badRequest(
      `model '${facts.name}' does not serve embeddings: it needs one BYTES input and an FP32 output`,
      'model',
    );
  }
  return { input, output };
}

export function embeddingInput(input: TensorMetadata, text: string): InferInput {
  return tensor(input, [text]);
}

/** The FP32 output's values (a copy: the response's buffer is not kept). */
export function readEmbedding(r: InferenceResponse, output: string): number[] {
  const t = r.outputs.find((o) => o.name === output);
  if (t === undefined) return [];
  const values: number[] = new Array<number>(t.data.length >>> 2);
  for (let i = 0; i < values.length; i++) values[i] = t.data.readFloatLE(4 * i);
  return values;
}
