// Turns text into token ids for text_classifier_onnx. Deterministic: the same text always gives the
// same ids. Each request may carry several rows (its batch dimension); each row is one string.
import { Tensor, type InferenceRequest, type InferenceResponseInit } from 'nereid-server';
import { PAD_ID, SEQUENCE_LENGTH, UNKNOWN_ID, VOCABULARY } from './vocab.js';

const IDS = new Map(VOCABULARY.map((word, id) => [word, BigInt(id)]));

export function tokenize(text: string, into: BigInt64Array): void {
  into.fill(PAD_ID);
  const words = text
    .toLowerCase()
    .split(/[^a-z']+/)
    .filter((w) => w !== '');
  for (let i = 0; i < words.length && i < SEQUENCE_LENGTH; i++) into[i] = IDS.get(words[i]) ?? UNKNOWN_ID;
}

export default class Tokenizer {
  execute(requests: InferenceRequest[]): InferenceResponseInit[] {
    return requests.map((request) => {
      const texts = request.input('TEXT')!.strings();
      const ids = new BigInt64Array(texts.length * SEQUENCE_LENGTH);
      texts.forEach((text, row) =>
        tokenize(text, ids.subarray(row * SEQUENCE_LENGTH, (row + 1) * SEQUENCE_LENGTH)),
      );
      return { outputs: [Tensor.from('INPUT_IDS', ids, { shape: [texts.length, SEQUENCE_LENGTH] })] };
    });
  }
}
