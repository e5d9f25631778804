/**
 * POST /v1/embeddings: one inference request per input string (through the model handle's infer(), so
 * any embedding model works whatever its batch settings; the scheduler batches them when the model
 * allows), the FP32 output as the embedding, `float` or `base64` (little-endian float32) as asked.
 * `usage` comes from a `num_input_tokens` output when the model has one.
 */
import type { ServerResponse } from 'node:http';
import { runCall } from '../../core/index.js';
import { CancelOnClose } from '../signal-pool.js';
import {
  embeddingContract,
  embeddingInput,
  openAiCall,
  openAiRequest,
  readEmbedding,
  type ModelFacts,
} from './contract.js';
import type { EmbeddingRequest } from './request.js';

export async function runEmbeddings(
  res: ServerResponse,
  facts: ModelFacts,
  request: EmbeddingRequest,
): Promise<string> {
  const { input, output } = embeddingContract(facts);
  const cancel = new CancelOnClose(res, false);
  let promptTokens: number | undefined;
  try {
    const results = await Promise.all(
      request.input.map((text) =>
        runCall(facts.model, openAiRequest(facts, [embeddingInput(input, text)]), openAiCall(cancel.signal)),
      ),
    );
    const data = results.map((r, index) => {
      const values = readEmbedding(r, output.name);
      const tokens = r.outputs.find((o) => o.name === 'num_input_tokens');
      if (tokens !== undefined && tokens.data.length >= 4) {
        promptTokens = (promptTokens ?? 0) + tokens.data.readUInt32LE(0);
      }
      const embedding =
        request.encodingFormat === 'base64'
          ? Buffer.from(new Float32Array(values).buffer).toString('base64')
          : values;
      return { object: 'embedding', index, embedding };
    });
    return JSON.stringify({
      object: 'list',
      data,
      model: request.model,
      ...(promptTokens !== undefined && {
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
      }),
    });
  } catch (err) {
    cancel.controller.abort(); // one failed: the others are not wanted
    throw err;
  } finally {
    cancel.done();
  }
}
