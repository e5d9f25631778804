// Config values that become paths stay inside the model folder (issue 23, item 5), over real sockets in
// explicit mode: default_model_filename (a Python model outside the repository is never imported, an
// ONNX model never opens /etc/shadow), label_filename, a warmup input_data_file, EXECUTION_ENV_PATH, and
// symbolic links inside a model folder that lead outside it are refused with a clean 400 that names the
// problem, says the same whether the outside target exists or not, and shows no path of the server's.
// Links that stay in the repository, and a version folder linked to where a release really lives, load
// as in Triton. EXECUTION_ENV_PATH outside the model folder works only inside a folder the operator
// allows. A `file:` override name over 255 bytes is Triton's 500, without the server's temporary folder.
import assert from 'node:assert/strict';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  FIXTURES,
  makeRepository,
  post,
  removeRepository,
  request,
  startServer,
  type TestServer,
} from './harness.js';
import { VENV_PYTHON, pythonFlags, stubPids } from './python-support.js';

const PY_MODEL = `
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())])
            for r in requests
        ]
`;

const pyConfig = (name: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({
    name,
    backend: 'python',
    max_batch_size: 0,
    input: [{ name: 'IN', data_type: 'TYPE_INT32', dims: [1] }],
    output: [{ name: 'OUT', data_type: 'TYPE_INT32', dims: [1] }],
    instance_group: [{ kind: 'KIND_CPU', count: 1 }],
    ...extra,
  });

const onnxConfig = (name: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ name, backend: 'onnxruntime', max_batch_size: 0, ...extra });

const envParam = (value: string): Record<string, unknown> => ({
  parameters: { EXECUTION_ENV_PATH: { string_value: value } },
});

/** An execution environment whose bin/python3 runs the checkout's interpreter. */
function makeEnv(dir: string): void {
  mkdirSync(path.join(dir, 'bin'), { recursive: true });
  const exe = path.join(dir, 'bin', 'python3');
  writeFileSync(exe, `#!/bin/sh\nexec ${VENV_PYTHON} "$@"\n`);
  chmodSync(exe, 0o755);
}

describe('config paths are confined to the model folder', () => {
  let repo: string;
  let outside: string;
  let marker: string;
  let server: TestServer;
  let allowing: TestServer;

  before(async () => {
    outside = mkdtempSync(path.join(os.tmpdir(), 'nereid-outside-'));
    marker = path.join(outside, 'imported');
    writeFileSync(
      path.join(outside, 'evil.py'),
      `open(${JSON.stringify(marker)}, "w").write("ran")\n${PY_MODEL}`,
    );
    cpSync(path.join(FIXTURES, 'identity_fp32.onnx'), path.join(outside, 'secret.onnx'));
    writeFileSync(path.join(outside, 'labels.txt'), 'a\nb\n');
    mkdirSync(path.join(outside, 'release1'));
    cpSync(path.join(FIXTURES, 'identity_fp32.onnx'), path.join(outside, 'release1', 'model.onnx'));
    makeEnv(path.join(outside, 'envs', 'shared'));

    repo = makeRepository({
      py: { files: { '1/model.py': PY_MODEL } },
      onnx: { onnx: 'identity_fp32.onnx' },
      py_link: { files: {} },
      onnx_link: { files: {} },
      label_link: { onnx: 'identity_fp32.onnx' },
      inside_link: { files: { 'weights/id.onnx': '' } },
      version_link: { versions: [] },
      env_inside: { files: { '1/model.py': PY_MODEL } },
      env_link: { files: { '1/model.py': PY_MODEL } },
    });
    symlinkSync(path.join(outside, 'evil.py'), path.join(repo, 'py_link/1/model.py'));
    symlinkSync(path.join(outside, 'secret.onnx'), path.join(repo, 'onnx_link/1/model.onnx'));
    symlinkSync(path.join(outside, 'labels.txt'), path.join(repo, 'label_link/labels.txt'));
    cpSync(path.join(FIXTURES, 'identity_fp32.onnx'), path.join(repo, 'inside_link/weights/id.onnx'));
    symlinkSync('../weights/id.onnx', path.join(repo, 'inside_link/1/model.onnx'));
    symlinkSync(path.join(outside, 'release1'), path.join(repo, 'version_link/1'));
    makeEnv(path.join(repo, 'env_inside', 'env'));
    symlinkSync('/usr', path.join(repo, 'env_link', 'env'));

    const flags = [`--model-repository=${repo}`, '--model-control-mode=explicit', '--load-model=onnx'];
    server = await startServer([...flags, ...pythonFlags('nereid_paths_a_')]);
    allowing = await startServer([
      ...flags,
      ...pythonFlags('nereid_paths_b_'),
      `--backend-config=python,execution-env-allowed-paths=/nonexistent-nereid:${path.join(outside, 'envs')}`,
    ]);
  });

  after(async () => {
    await server?.stop();
    await allowing?.stop();
    if (repo) removeRepository(repo);
    if (outside) rmSync(outside, { recursive: true, force: true });
  });

  const load = (s: TestServer, model: string, config: string): ReturnType<typeof post> =>
    post(`${s.url}/v2/repository/models/${model}/load`, { parameters: { config } });

  /**
   * The 400's message; apart from the value the client sent itself (`echoed`), it must not name any folder
   * of the server's or outside the repository.
   */
  const refusal = (
    res: { status: number; body: Buffer },
    pattern: RegExp,
    echoed = '',
    status = 400,
  ): string => {
    assert.equal(res.status, status, res.body.toString());
    const message = (JSON.parse(res.body.toString()) as { error: string }).error;
    assert.match(message, pattern);
    const rest = echoed ? message.split(echoed).join('<value>') : message;
    for (const p of [repo, outside, os.tmpdir(), path.dirname(VENV_PYTHON)]) {
      assert.ok(!rest.includes(p), `'${message}' names ${p}`);
    }
    return message;
  };

  const healthy = async (s: TestServer): Promise<void> => {
    assert.equal((await request(`${s.url}/v2/health/live`)).status, 200);
    const res = await post(`${s.url}/v2/models/onnx/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2], data: [1, 2] }],
    });
    assert.equal(res.status, 200, res.body.toString());
  };

  const inferPy = async (s: TestServer, model: string): Promise<void> => {
    const res = await post(`${s.url}/v2/models/${model}/infer`, {
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [7] }],
    });
    assert.equal(res.status, 200, res.body.toString());
    assert.deepEqual(res.json<{ outputs: { data: number[] }[] }>().outputs[0].data, [7]);
  };

  it('default_model_filename cannot import a Python file outside the repository', async () => {
    const rel = path.relative(path.join(repo, 'py', '1'), path.join(outside, 'evil.py'));
    assert.ok(rel.startsWith('..'));
    const res = await load(server, 'py', pyConfig('py', { default_model_filename: rel }));
    refusal(res, /default_model_filename '\.\.\/.*' of model 'py' leaves the model folder/);
    assert.equal(existsSync(marker), false, 'the outside model.py ran');
    assert.deepEqual(stubPids(), []);
    await healthy(server);
  });

  it('default_model_filename cannot make onnxruntime open /etc/shadow, and does not tell what exists', async () => {
    const up = '../'.repeat(12);
    const shadow = refusal(
      await load(server, 'onnx', onnxConfig('onnx', { default_model_filename: `${up}etc/shadow` })),
      /leaves the model folder/,
    );
    const missing = refusal(
      await load(server, 'onnx', onnxConfig('onnx', { default_model_filename: `${up}etc/no-such-file` })),
      /leaves the model folder/,
    );
    assert.equal(shadow.replace('shadow', 'X'), missing.replace('no-such-file', 'X'));
    await healthy(server);
  });

  it('label_filename and a warmup input_data_file must stay inside', async () => {
    const label = onnxConfig('onnx', {
      output: [
        { name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1, -1], label_filename: '../../etc/passwd' },
      ],
    });
    refusal(
      await load(server, 'onnx', label),
      /label_filename '\.\.\/\.\.\/etc\/passwd' .*leaves the model folder/,
    );
    const warmup = onnxConfig('onnx', {
      model_warmup: [
        {
          name: 'w',
          batch_size: 1,
          inputs: {
            INPUT0: { data_type: 'TYPE_FP32', dims: [1, 2], input_data_file: '../../../etc/passwd' },
          },
        },
      ],
    });
    refusal(
      await load(server, 'onnx', warmup),
      /input_data_file '\.\.\/\.\.\/\.\.\/etc\/passwd'.*leaves the model folder/,
    );
    await healthy(server);
  });

  it('symbolic links in a model folder that lead outside it are refused', async () => {
    refusal(
      await load(server, 'py_link', pyConfig('py_link')),
      /of model 'py_link': '1\/model\.py' leads outside the model folder through a symbolic link/,
    );
    assert.equal(existsSync(marker), false, 'the outside model.py ran');
    refusal(
      await load(server, 'onnx_link', onnxConfig('onnx_link')),
      /'1\/model\.onnx' leads outside the model folder/,
    );
    const labels = onnxConfig('label_link', {
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1, -1], label_filename: 'labels.txt' }],
    });
    refusal(await load(server, 'label_link', labels), /'labels\.txt' leads outside the model folder/);
    await healthy(server);
  });

  it('links inside the model folder, and a version folder linked elsewhere, load as in Triton', async () => {
    for (const model of ['inside_link', 'version_link']) {
      const res = await post(`${server.url}/v2/repository/models/${model}/load`, {});
      assert.equal(res.status, 200, `${model}: ${res.body.toString()}`);
      const out = await post(`${server.url}/v2/models/${model}/infer`, {
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2], data: [3, 4] }],
      });
      assert.equal(out.status, 200, out.body.toString());
    }
  });

  it('EXECUTION_ENV_PATH outside the model folder is refused, the same whether it exists or not', async () => {
    const usr = refusal(
      await load(server, 'py', pyConfig('py', envParam('/usr'))),
      /EXECUTION_ENV_PATH '\/usr' of model 'py' is outside the model folder.*execution-env-allowed-paths/,
    );
    const none = refusal(
      await load(server, 'py', pyConfig('py', envParam('/no-such-env-nereid'))),
      /is outside the model folder/,
    );
    assert.equal(usr.replace('/usr', 'X'), none.replace('/no-such-env-nereid', 'X'));
    refusal(
      await load(server, 'py', pyConfig('py', envParam('$$TRITON_MODEL_DIRECTORY/../../..'))),
      /is outside the model folder/,
    );
    refusal(
      await load(server, 'env_link', pyConfig('env_link', envParam('$$TRITON_MODEL_DIRECTORY/env'))),
      /'env' leads outside the model folder through a symbolic link/,
    );
    const shared = path.join(outside, 'envs', 'shared');
    refusal(
      await load(server, 'py', pyConfig('py', envParam(shared))),
      /is outside the model folder/,
      shared,
    );
    assert.deepEqual(stubPids(), []);
    await healthy(server);
  });

  it('EXECUTION_ENV_PATH inside the model folder works, and outside it only where the operator allows', async () => {
    const inside = await load(
      server,
      'env_inside',
      pyConfig('env_inside', envParam('$$TRITON_MODEL_DIRECTORY/env')),
    );
    assert.equal(inside.status, 200, inside.body.toString());
    await inferPy(server, 'env_inside');
    assert.equal((await post(`${server.url}/v2/repository/models/env_inside/unload`, {})).status, 200);

    const shared = path.join(outside, 'envs', 'shared');
    const res = await load(allowing, 'py', pyConfig('py', envParam(shared)));
    assert.equal(res.status, 200, res.body.toString());
    await inferPy(allowing, 'py');
    // The allow-list is a list of folders, not of prefixes: /usr is still refused there.
    refusal(
      await load(allowing, 'env_link', pyConfig('env_link', envParam('/usr'))),
      /is outside the model folder/,
    );
    assert.equal((await post(`${allowing.url}/v2/repository/models/py/unload`, {})).status, 200);
    await healthy(allowing);
  });

  it("a file: override name over 255 bytes is refused with Triton's 500, without the temporary folder", async () => {
    const long = `file:1/${'n'.repeat(300)}.py`;
    const res = await post(`${server.url}/v2/repository/models/py/load`, {
      parameters: { config: pyConfig('py'), [long]: Buffer.from(PY_MODEL).toString('base64') },
    });
    // Triton's INTERNAL, which simple_grpc_model_control.py expects (400 with --load-error-status=client-error).
    refusal(res, /Invalid file parameter.*longer than 255 bytes/, '', 500);
    await healthy(server);
  });
});
