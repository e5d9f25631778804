// The tokenizer's whole vocabulary: id = position. 0 pads, 1 stands for any word not listed. The
// sentiment words line up with the weights of text_classifier_onnx (generate_model.py there).
export const VOCABULARY: readonly string[] = [
  '[PAD]', '[UNK]',
  'the', 'a', 'an', 'this', 'that', 'it', 'is', 'was', 'and', 'but', 'i', 'you', 'very', 'so', 'movie', 'film', 'book', 'food', 'not',
  'good', 'great', 'love', 'excellent', 'fun', 'wonderful', 'best', 'nice',
  'bad', 'terrible', 'hate', 'boring', 'awful', 'worst', 'poor', 'dull',
];

export const PAD_ID = 0n;
export const UNKNOWN_ID = 1n;
export const SEQUENCE_LENGTH = 16;
