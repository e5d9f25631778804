/**
 * The tensor interface of Triton's vLLM backend, which Triton's OpenAI frontend and the generate
 * endpoints speak: BYTES `text_input`, BOOL `stream`, BYTES `sampling_parameters` (JSON, sampling.ts),
 * BOOL `exclude_input_in_output`, and the additional-output switches `return_num_input_tokens`,
 * `return_num_output_tokens`, `return_finish_reason`; answered with BYTES `text_output` and, when asked,
 * UINT32 `num_input_tokens` / `num_output_tokens` and BYTES `finish_reason`. An additional output that
 * the config declares without its switch input is always sent (the toy_llm convention); one it does not
 * declare is never sent. A BYTES `logprobs` output carries, when `sampling_parameters` asks for
 * `logprobs`, a JSON list with one entry per token of that response (LogprobEntry). autoCompleteConfig()
 * fills this interface into a config that has no tensors.
 *
 * An embedding model (a config whose output is an FP32 `embedding`, docs/llm.md) takes `text_input` and
 * answers `embedding` (the pooled vector) and `num_input_tokens`.
 */
import type { BackendRequest } from '../../backend-api/backend.js';
import { invalidArg } from '../../common/errors.js';
import { joinBytesElements, splitBytesElements, type Tensor } from '../../common/tensor.js';
import type { FrozenModelConfig, ModelConfig } from '../../model-config/model-config.js';

export interface VllmRequest {
  readonly prompt: string;
  readonly stream: boolean;
  readonly samplingJson: string | undefined;
  readonly excludeInputInOutput: boolean;
  readonly returnInputTokens: boolean;
  readonly returnOutputTokens: boolean;
  readonly returnFinishReason: boolean;
}

/** Which additional outputs the config declares, and whether each has a switch input. */
export interface VllmOutputPlan {
  readonly inputTokens: 'never' | 'always' | 'switch';
  readonly outputTokens: 'never' | 'always' | 'switch';
  readonly finishReason: 'never' | 'always' | 'switch';
  /** The config declares a BYTES `logprobs` output. */
  readonly logprobs: boolean;
  /** The config's FP32 embedding output: the model serves embeddings, not generation. */
  readonly embedding: string | undefined;
}

/** One generated token's log probability, and the most likely alternatives when asked. */
export interface LogprobEntry {
  readonly id: number;
  readonly token: string;
  readonly logprob: number;
  readonly top: readonly { readonly id: number; readonly token: string; readonly logprob: number }[];
}

export function outputPlan(config: FrozenModelConfig): VllmOutputPlan {
  const outputs = new Set(config.output.map((o) => o.name));
  const inputs = new Set(config.input.map((i) => i.name));
  const plan = (output: string, input: string): 'never' | 'always' | 'switch' =>
    !outputs.has(output) ? 'never' : inputs.has(input) ? 'switch' : 'always';
  return {
    inputTokens: plan('num_input_tokens', 'return_num_input_tokens'),
    outputTokens: plan('num_output_tokens', 'return_num_output_tokens'),
    finishReason: plan('finish_reason', 'return_finish_reason'),
    logprobs: config.output.some((o) => o.name === 'logprobs' && o.data_type === 'TYPE_STRING'),
    embedding: config.output.find((o) => o.name === 'embedding' && o.data_type === 'TYPE_FP32')?.name,
  };
}

function firstString(req: BackendRequest, name: string): string | undefined {
  const t = req.inputs.get(name);
  if (t === undefined) return undefined;
  const elements = splitBytesElements(t.data);
  if (elements.length !== 1) throw invalidArg(`input '${name}' must hold exactly one string`);
  return elements[0].toString('utf8');
}

function firstBool(req: BackendRequest, name: string): boolean | undefined {
  const t = req.inputs.get(name);
  if (t === undefined || t.data.length === 0) return undefined;
  return t.data[0] !== 0;
}

export function readVllmRequest(req: BackendRequest, plan: VllmOutputPlan): VllmRequest {
  const prompt = firstString(req, 'text_input');
  if (prompt === undefined) throw invalidArg("input 'text_input' is required");
  const asked = (mode: VllmOutputPlan['inputTokens'], name: string): boolean =>
    mode === 'always' || (mode === 'switch' && firstBool(req, name) === true);
  return {
    prompt,
    stream: firstBool(req, 'stream') ?? false,
    samplingJson: firstString(req, 'sampling_parameters'),
    excludeInputInOutput: firstBool(req, 'exclude_input_in_output') ?? false,
    returnInputTokens: asked(plan.inputTokens, 'return_num_input_tokens'),
    returnOutputTokens: asked(plan.outputTokens, 'return_num_output_tokens'),
    returnFinishReason: asked(plan.finishReason, 'return_finish_reason'),
  };
}

const uint32 = (name: string, value: number): Tensor => {
  const data = Buffer.allocUnsafe(4);
  data.writeUInt32LE(value, 0);
  return { name, datatype: 'UINT32', shape: [1], data };
};

const bytes = (name: string, value: string): Tensor => ({
  name,
  datatype: 'BYTES',
  shape: [1],
  data: joinBytesElements([value]),
});

/** One response's tensors. */
export function responseTensors(
  request: VllmRequest,
  text: string,
  counts: { readonly inputTokens: number; readonly outputTokens: number },
  finishReason: string | undefined,
  logprobs?: readonly LogprobEntry[],
): Tensor[] {
  const out: Tensor[] = [bytes('text_output', text)];
  if (logprobs !== undefined) out.push(bytes('logprobs', JSON.stringify(logprobs)));
  if (request.returnInputTokens) out.push(uint32('num_input_tokens', counts.inputTokens));
  if (request.returnOutputTokens) out.push(uint32('num_output_tokens', counts.outputTokens));
  if (request.returnFinishReason && finishReason !== undefined)
    out.push(bytes('finish_reason', finishReason));
  return out;
}

/** An embedding response: the vector as FP32 and the prompt's token count. */
export function embeddingTensors(name: string, vector: readonly number[], inputTokens: number): Tensor[] {
  const data = Buffer.allocUnsafe(4 * vector.length);
  vector.forEach((v, i) => data.writeFloatLE(v, 4 * i));
  return [{ name, datatype: 'FP32', shape: [vector.length], data }, uint32('num_input_tokens', inputTokens)];
}

/** The vLLM interface for a config that declares no tensors (Triton's vLLM backend does the same). */
export function completeVllmConfig(config: ModelConfig): ModelConfig {
  if (config.input.length > 0 || config.output.length > 0) return config;
  const bool = (name: string): ModelConfig['input'][number] => ({
    name,
    data_type: 'TYPE_BOOL',
    dims: [1],
    optional: true,
  });
  return {
    ...config,
    max_batch_size: 0,
    model_transaction_policy: { ...config.model_transaction_policy, decoupled: true },
    input: [
      { name: 'text_input', data_type: 'TYPE_STRING', dims: [1] },
      bool('stream'),
      { name: 'sampling_parameters', data_type: 'TYPE_STRING', dims: [1], optional: true },
      bool('exclude_input_in_output'),
      bool('return_num_input_tokens'),
      bool('return_num_output_tokens'),
      bool('return_finish_reason'),
    ],
    output: [
      { name: 'text_output', data_type: 'TYPE_STRING', dims: [-1] },
      { name: 'num_input_tokens', data_type: 'TYPE_UINT32', dims: [1] },
      { name: 'num_output_tokens', data_type: 'TYPE_UINT32', dims: [1] },
      { name: 'finish_reason', data_type: 'TYPE_STRING', dims: [-1] },
      { name: 'logprobs', data_type: 'TYPE_STRING', dims: [-1] },
    ],
  };
}
