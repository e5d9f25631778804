// Nereid inside an application, no server process and no socket: start it on the bundled repository,
// call an ONNX model, a TypeScript+ONNX ensemble and a streaming TypeScript model in-process, then expose
// the same server over HTTP for a moment. docs/embedding.md explains each call.
//
// Run from the repository root:  npm run build && node examples/embedding/embed.js
import { fileURLToPath } from 'node:url';
import { Nereid, Tensor } from 'nereid-server';

const repository = fileURLToPath(new URL('../model_repository', import.meta.url));

const server = await Nereid.start({
  modelRepository: repository,
  modelControlMode: 'explicit',
  loadModels: ['simple', 'tokenizer_ts', 'text_classifier_onnx', 'text_classifier_ensemble', 'stream_ts'],
});

try {
  // 1. An ONNX model, tensors as typed arrays (no copies on the way in or out).
  const a = Int32Array.from({ length: 16 }, (_, i) => i);
  const b = new Int32Array(16).fill(10);
  const sums = await server.infer({
    model: 'simple',
    inputs: [Tensor.from('INPUT0', a, { shape: [1, 16] }), Tensor.from('INPUT1', b, { shape: [1, 16] })],
  });
  console.log('simple OUTPUT0:', [...sums.requireOutput('OUTPUT0').int32()].join(' '));

  // 2. Text in, sentiment out: a TypeScript tokenizer feeding an ONNX scorer (an ensemble). Plain arrays
  //    work too: datatype and shape come from the model's metadata.
  for (const text of ['I love this great movie', 'a boring and terrible film']) {
    const r = await server.infer({ model: 'text_classifier_ensemble', inputs: { TEXT: [text] } });
    const [negative, positive] = r.requireOutput('LOGITS').float32();
    console.log(`"${text}" ->`, positive > negative ? 'positive' : 'negative', [negative, positive]);
  }

  // 3. A decoupled (streaming) TypeScript model: iterate its responses as they are produced.
  const words = [];
  for await (const part of server.inferStream({
    model: 'stream_ts',
    inputs: { PROMPT: ['streamed word by word'] },
  })) {
    if (!part.final) words.push(part.requireOutput('TOKEN').strings()[0]);
  }
  console.log('stream_ts tokens:', words.join(' | '));

  // 4. The same server over HTTP, only while needed.
  const http = await server.listenHttp({ port: 0 });
  const res = await fetch(`http://127.0.0.1:${http.port}/v2/models/text_classifier_ensemble/infer`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [1, 1], data: ['excellent food'] }],
    }),
  });
  console.log(`HTTP on port ${http.port}:`, res.status, JSON.stringify((await res.json()).outputs[0].data));
  await server.stopListening('http');
} finally {
  await server.close();
}
