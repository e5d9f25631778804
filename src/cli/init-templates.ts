/**
 * The files `nereid init` writes: a config.pbtxt, the model (TypeScript, Python, or a note and a starter
 * ONNX file) and a test the user can run with what `npm install nereid-server` gives them (node:test and the
 * in-process API). Every scaffold has the same contract, so the printed curl line and the test are the
 * same for all backends: INPUT0 FP32 [-1] in, OUTPUT0 FP32 out — doubled by the JavaScript and Python
 * models (streamed one element per response when decoupled), copied by the starter ONNX identity model.
 * A llamacpp scaffold is a language model instead (docs/llm.md): a config, the engine settings
 * (1/model.json) and a test that generates text from the GGUF file put at 1/model.gguf.
 */

export type InitBackend = 'javascript' | 'python' | 'onnxruntime' | 'llamacpp';

export interface InitSpec {
  readonly name: string;
  readonly backend: InitBackend;
  readonly decoupled: boolean;
}

/** A file to write, relative to the model folder. */
export interface ScaffoldFile {
  readonly path: string;
  readonly text: string;
  /** What the file is, for the summary `nereid init` prints. */
  readonly role: string;
}

function configText(s: InitSpec): string {
  if (s.backend === 'llamacpp') return llamacppConfig(s);
  const header = {
    javascript: `# ${s.name}: a JavaScript/TypeScript model (docs/javascript-models.md), made by \`nereid init\`.`,
    python: `# ${s.name}: a Python model (docs/python-backend.md), made by \`nereid init\`.`,
    onnxruntime:
      `# ${s.name}: an ONNX model (docs/onnxruntime.md), made by \`nereid init\`. Put your model at\n` +
      `# ${s.name}/1/model.onnx (the starter file there is an identity model: OUTPUT0 = INPUT0), then make the\n` +
      '# inputs and outputs below match it, or delete them and let the server read them from the model.',
    llamacpp: '',
  }[s.backend];
  const lines = [header, `name: "${s.name}"`];
  if (s.backend === 'onnxruntime') lines.push('platform: "onnxruntime_onnx"');
  else lines.push(`backend: "${s.backend}"`);
  // A decoupled model answers each request with a stream; batching requests together is left out.
  lines.push(`max_batch_size: ${s.decoupled ? 0 : 8}`);
  if (s.decoupled) lines.push('model_transaction_policy {', '  decoupled: true', '}');
  lines.push(
    'input [',
    '  {',
    '    name: "INPUT0"',
    '    data_type: TYPE_FP32',
    '    dims: [ -1 ]',
    '  }',
    ']',
    'output [',
    '  {',
    '    name: "OUTPUT0"',
    '    data_type: TYPE_FP32',
    `    dims: [ ${s.decoupled ? 1 : -1} ]`,
    '  }',
    ']',
    'instance_group [',
    '  {',
    '    count: 1',
    '    kind: KIND_CPU',
    '  }',
    ']',
  );
  return lines.join('\n') + '\n';
}

function javascriptModel(s: InitSpec): string {
  if (s.decoupled) {
    return `// ${s.name}: a decoupled model. Each request gets one response per element of INPUT0 (the element
// doubled, as OUTPUT0 of shape [1]), then the final flag. Edit it and save: \`nereid --watch\` reloads it.
// The types come from Nereid's SDK ('nereid-server' resolves inside the model's worker without node_modules).
import {
  NereidError,
  RESPONSE_COMPLETE_FINAL,
  Tensor,
  type InferenceRequest,
  type Model,
  type ModelContext,
  type ModelInitializeArgs,
} from 'nereid-server';

export default class StreamingModel implements Model {
  private log: ModelContext['log'] | undefined;

  /** Once per instance, before it serves: read parameters and files (context.modelDir is this folder). */
  initialize(_args: ModelInitializeArgs, context: ModelContext): void {
    this.log = context.log;
    if (!context.decoupled) {
      throw new NereidError('INVALID_ARG', 'set model_transaction_policy { decoupled: true } in config.pbtxt');
    }
  }

  /** Starts a stream per request and returns; the responses follow through each request's sender. */
  execute(requests: InferenceRequest[]): void {
    for (const request of requests) void this.stream(request);
  }

  private async stream(request: InferenceRequest): Promise<void> {
    const sender = request.getResponseSender();
    try {
      const values = request.input('INPUT0')!.float32();
      for (const v of values) {
        if (request.isCancelled()) break;
        sender.send({ outputs: [Tensor.from('OUTPUT0', new Float32Array([v * 2]), { shape: [1] })] });
        await Promise.resolve(); // a real generator would await its next token here
      }
      sender.send(undefined, RESPONSE_COMPLETE_FINAL);
    } catch (err) {
      this.log?.error(\`stream failed: \${String(err)}\`);
      if (!sender.done) sender.send({ error: err instanceof Error ? err : String(err) }, RESPONSE_COMPLETE_FINAL);
    }
  }

  /** On unload, after every stream has ended: release what initialize() took. */
  finalize(): void {}
}
`;
  }
  return `// ${s.name}: OUTPUT0 = 2 * INPUT0, for every request of a batch. Edit execute() and save: \`nereid --watch\`
// reloads the model. The types come from Nereid's SDK ('nereid-server' resolves inside the model's worker without
// node_modules; docs/javascript-models.md).
import {
  Tensor,
  type InferenceRequest,
  type InferenceResponseInit,
  type Model,
  type ModelContext,
  type ModelInitializeArgs,
} from 'nereid-server';

export default class DoublingModel implements Model {
  /** Once per instance, before it serves: read parameters and files (context.modelDir is this folder). */
  initialize(_args: ModelInitializeArgs, context: ModelContext): void {
    context.log.verbose(\`\${context.instanceName} initialized\`);
  }

  /** Every batch: one response per request, in request order. */
  execute(requests: InferenceRequest[]): InferenceResponseInit[] {
    return requests.map((request) => {
      const x = request.input('INPUT0')!; // declared in config.pbtxt, so always present
      const y = x.float32().map((v) => v * 2);
      return { outputs: [Tensor.from('OUTPUT0', y, { shape: x.shape })] };
    });
  }

  /** On unload: release what initialize() took. */
  finalize(): void {}
}
`;
}

function pythonModel(s: InitSpec): string {
  if (s.decoupled) {
    return `"""${s.name}: a decoupled model.

Each request gets one response per element of INPUT0 (the element doubled, as OUTPUT0
of shape [1]), then the final flag. Edit it and save: \`nereid --watch\` reloads it
(docs/python-backend.md)."""

from __future__ import annotations

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        """Once per instance, before it serves; args["model_repository"] is this model's folder."""
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException(
                "set model_transaction_policy { decoupled: true } in config.pbtxt"
            )

    def execute(self, requests: list[pb_utils.InferenceRequest]) -> None:
        """Answers through each request's response sender; returns nothing."""
        for request in requests:
            sender = request.get_response_sender()
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            assert x is not None  # declared in config.pbtxt, so always present
            for v in x.as_numpy().reshape(-1):
                if request.is_cancelled():
                    break
                out = pb_utils.Tensor("OUTPUT0", np.array([v * 2], dtype=np.float32))
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self) -> None:
        """On unload: release what initialize() took."""
`;
  }
  return `"""${s.name}: OUTPUT0 = 2 * INPUT0, for every request of a batch.

Edit execute() and save: \`nereid --watch\` reloads the model (docs/python-backend.md)."""

from __future__ import annotations

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        """Once per instance, before it serves; args["model_repository"] is this model's folder."""
        self.name = args["model_name"]

    def execute(
        self, requests: list[pb_utils.InferenceRequest]
    ) -> list[pb_utils.InferenceResponse]:
        """Every batch: one response per request, in request order."""
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            assert x is not None  # declared in config.pbtxt, so always present
            y = pb_utils.Tensor("OUTPUT0", (x.as_numpy() * 2).astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[y]))
        return responses

    def finalize(self) -> None:
        """On unload: release what initialize() took."""
`;
}

/**
 * A llamacpp model: decoupled, no tensors declared (the server fills in Triton's vLLM-backend interface,
 * which generate, generate_stream, gRPC streaming and /v1 speak), one instance (the engine is shared).
 */
function llamacppConfig(s: InitSpec): string {
  return `# ${s.name}: a GGUF language model on llama.cpp (docs/llm.md), made by \`nereid init\`. The model file is
# ${s.name}/1/model.gguf and its engine settings (context, parallel sequences, threads) are in 1/model.json.
# The inputs and outputs are left out: the server fills in Triton's vLLM-backend interface (text_input,
# stream, sampling_parameters -> text_output). Declare input_ids instead for TensorRT-LLM's interface.
name: "${s.name}"
backend: "llamacpp"
model_transaction_policy {
  decoupled: true
}
instance_group [
  {
    count: 1
    kind: KIND_CPU
  }
]
`;
}

/** The engine settings with their defaults written out, so they can be edited (docs/llm.md lists them). */
export function llamacppEngineSettings(): string {
  return (
    JSON.stringify(
      {
        context_size: 2048,
        parallel_sequences: 4,
        threads: 0,
        batch_size: 512,
        max_queue_size: 0,
        default_max_tokens: 16,
        enable_prefix_caching: true,
      },
      null,
      2,
    ) + '\n'
  );
}

/** The llamacpp model's test: generates greedily twice through the in-process API and compares. */
function llamacppTestFile(s: InitSpec): string {
  return `// A test for the language model '${s.name}', made by \`nereid init\`. Run it with
//   node --test <repository>/${s.name}/test_${s.name}.mjs
// It starts Nereid in this process (no ports), loads only this model from the repository this file lives
// in, and asks it for 8 tokens twice, greedily: a text comes back, the same both times.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Nereid } from 'nereid-server';

const MODEL = '${s.name}';
const repository = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const gguf = path.join(repository, MODEL, '1', 'model.gguf');

test(\`\${MODEL} generates the same greedy text twice\`, async () => {
  assert.ok(existsSync(gguf), \`put a GGUF model at \${gguf} first (docs/llm.md suggests a small one)\`);
  const server = await Nereid.start({
    modelRepository: repository,
    modelControlMode: 'explicit',
    loadModels: [MODEL],
  });
  try {
    const generate = async () => {
      let text = '';
      const request = {
        model: MODEL,
        inputs: {
          text_input: ['The capital of France is'],
          sampling_parameters: [JSON.stringify({ max_tokens: 8, temperature: 0 })],
          exclude_input_in_output: [true],
        },
      };
      for await (const part of server.inferStream(request)) {
        const out = part.output('text_output');
        if (out) text += out.strings().join('');
      }
      return text;
    };
    const first = await generate();
    assert.ok(first.length > 0, 'some text was generated');
    assert.equal(await generate(), first);
  } finally {
    await server.close();
  }
});
`;
}

/** The test: node:test, the in-process API, the same call the printed curl line makes. */
function testFile(s: InitSpec): string {
  if (s.backend === 'llamacpp') return llamacppTestFile(s);
  const expected = s.backend === 'onnxruntime' ? '[1, 2, 3, 4]' : '[2, 4, 6, 8]';
  const what = s.backend === 'onnxruntime' ? 'copies INPUT0 (the starter identity model)' : 'doubles INPUT0';
  const call = s.decoupled
    ? `    const got = [];
    for await (const part of server.inferStream({ model: MODEL, inputs: { INPUT0: new Float32Array([1, 2, 3, 4]) } })) {
      const out = part.output('OUTPUT0');
      if (out) got.push(...out.float32());
    }
    assert.deepEqual(got, ${expected});`
    : `    const response = await server.infer({ model: MODEL, inputs: { INPUT0: new Float32Array([1, 2, 3, 4]) } });
    const out = response.output('OUTPUT0');
    assert.ok(out, 'the response has OUTPUT0');
    assert.deepEqual([...out.float32()], ${expected});`;
  return `// A test for the model '${s.name}', made by \`nereid init\`. Run it with
//   node --test ${'<repository>'}/${s.name}/test_${s.name}.mjs
// It starts Nereid in this process (no ports), loads only this model from the repository this file
// lives in, and calls it. Change the expectation when you change the model.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Nereid } from 'nereid-server';

const MODEL = '${s.name}';
const repository = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

test(\`\${MODEL} ${what}\`, async () => {
  const server = await Nereid.start({
    modelRepository: repository,
    modelControlMode: 'explicit',
    loadModels: [MODEL],
  });
  try {
${call}
  } finally {
    await server.close();
  }
});
`;
}

/**
 * For TypeScript models: a tsconfig.json so that an editor (and `npx tsc -p <model folder>`) resolves
 * `nereid-server`'s types from the project's node_modules. The javascript backend does not need it: it strips
 * the types itself.
 */
function tsconfigFile(): string {
  return `{
  // For editors and \`npx tsc -p <this folder>\`: type-checks the model against the installed nereid-server
  // package's types. Serving does not read it (Nereid strips the types itself).
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "noEmit": true,
    "skipLibCheck": true
  },
  "include": ["1/**/*.ts"]
}
`;
}

/**
 * For Python models: a pytest test beside the Node one. It starts the real server (the `nereid` command of
 * the project's node_modules, or on PATH) on free ports with only this model, waits for it, calls it over
 * HTTP with the standard library, and stops it; the model's stub runs under the interpreter running pytest.
 */
function pythonTestFile(s: InitSpec): string {
  const call = s.decoupled
    ? `    body = json.dumps({"INPUT0": [1, 2, 3, 4]}).encode()
    url = f"{base}/v2/models/{MODEL}/generate_stream"
    with urlopen(Request(url, data=body, method="POST")) as reply:
        lines = reply.read().decode().splitlines()
    got: list[float] = []
    for line in lines:
        if line.startswith("data: "):
            out = json.loads(line[6:]).get("OUTPUT0")
            if out is not None:
                got.extend(out if isinstance(out, list) else [out])
    assert got == [2, 4, 6, 8]`
    : `    body = json.dumps(
        {"inputs": [{"name": "INPUT0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}
    ).encode()
    with urlopen(Request(f"{base}/v2/models/{MODEL}/infer", data=body, method="POST")) as reply:
        outputs = json.loads(reply.read())["outputs"]
    assert [o["data"] for o in outputs if o["name"] == "OUTPUT0"] == [[2, 4, 6, 8]]`;
  return `"""A pytest test for the model '${s.name}', made by \`nereid init\`. Run it with
    python3 -m pytest <repository>/${s.name}/test_${s.name}.py
It starts Nereid (the nereid command of this project's node_modules, or on PATH) with only this model on
free ports, calls it over HTTP and stops the server. Change the expectation when you change the model."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.error import URLError
from urllib.request import Request, urlopen

import pytest

MODEL = "${s.name}"
REPOSITORY = Path(__file__).resolve().parent.parent


def nereid_command() -> str:
    for folder in [REPOSITORY, *REPOSITORY.parents]:
        candidate = folder / "node_modules" / ".bin" / "nereid"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("nereid")
    if found is None:
        pytest.fail("no nereid command: npm install nereid-server (or a Nereid checkout's path) first")
    return found


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    server = subprocess.Popen(
        [
            nereid_command(),
            f"--model-repository={REPOSITORY}",
            "--model-control-mode=explicit",
            f"--load-model={MODEL}",
            f"--backend-config=python,python-executable={sys.executable}",
            "--http-port=0",
            "--grpc-port=0",
            "--allow-metrics=false",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        port = None
        for line in server.stderr:
            m = re.search(r"Started HTTPService at [^ ]*:(\\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port is not None, "the server exited before it served"
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                with urlopen(f"{url}/v2/models/{MODEL}/ready") as ready:
                    if ready.status == 200:
                        break
            except URLError:
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_${s.name.replace(/[^A-Za-z0-9_]/g, '_')}_doubles_input0(base: str) -> None:
${call}
`;
}

/** The files of a scaffold (the starter model.onnx is copied separately: it is binary). */
export function scaffoldFiles(s: InitSpec): ScaffoldFile[] {
  const files: ScaffoldFile[] = [
    {
      path: 'config.pbtxt',
      text: configText(s),
      role: "the model's configuration: inputs, outputs, batching",
    },
  ];
  if (s.backend === 'javascript') {
    files.push({
      path: '1/model.ts',
      text: javascriptModel(s),
      role: 'the model (version 1): edit execute()',
    });
    files.push({
      path: 'tsconfig.json',
      text: tsconfigFile(),
      role: "for editors: resolves the nereid-server package's types (serving does not need it)",
    });
  } else if (s.backend === 'llamacpp') {
    files.push({
      path: '1/model.json',
      text: llamacppEngineSettings(),
      role: 'the engine settings: context size, parallel sequences, threads, batch size, queue bound',
    });
  } else if (s.backend === 'python') {
    files.push({ path: '1/model.py', text: pythonModel(s), role: 'the model (version 1): edit execute()' });
    files.push({
      path: `test_${s.name}.py`,
      text: pythonTestFile(s),
      role: 'a pytest test that starts the server with the model and calls it over HTTP',
    });
  }
  files.push({
    path: `test_${s.name}.mjs`,
    text: testFile(s),
    role: 'a test that loads the model in-process and calls it (node --test)',
  });
  return files;
}
