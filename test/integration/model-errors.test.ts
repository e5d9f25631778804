// Errors a model author can act on, end to end on a real server (HTTP on port 0, real worker threads and
// Python stubs): a throwing JavaScript and Python model answer with the model, version, instance and the
// first frame in the user's own file (never a server path); the log holds the whole stack once per distinct
// error; initialize() failures and TypeScript build errors are labelled load errors; outputs the config
// does not declare, or requested ones left out, and outputs whose datatype or shape is not the config's
// (checked in the core for every backend) are warned about once, or fail the request with
// --strict-model-outputs=true.
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  addModel,
  makeRepository,
  post,
  removeRepository,
  ROOT,
  startServer,
  type TestServer,
} from './harness.js';
import { pythonFlags } from './python-support.js';

const FIXTURES = path.join(ROOT, 'test/fixtures/model-errors');

/** A TypeScript model that does not parse (written here: a broken file in the tree would fail prettier). */
const SYNTAX_ERROR_MODEL = [
  'export default class Model {',
  '  execute(requests: unknown[]) {',
  '    const answer: number = ;',
  '    return requests.map(() => ({ outputs: [] }));',
  '  }',
  '}',
  '',
].join('\n');

function repository(): string {
  const repo = makeRepository({});
  for (const m of ['errors_ts', 'errors_py', 'init_error_ts']) {
    cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  }
  cpSync(path.join(ROOT, 'test/fixtures/python/init_error'), path.join(repo, 'init_error'), {
    recursive: true,
  });
  addModel(repo, 'syntax_ts', {
    config: [
      'name: "syntax_ts"',
      'backend: "javascript"',
      'input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]',
      'output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]',
      'instance_group [ { count: 1 kind: KIND_CPU } ]',
    ].join('\n'),
    files: { '1/model.ts': SYNTAX_ERROR_MODEL },
  });
  const io = [
    'input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]',
    'output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]',
    'instance_group [ { count: 1 kind: KIND_CPU } ]',
  ];
  addModel(repo, 'import_error_js', {
    config: ['name: "import_error_js"', 'backend: "javascript"', ...io].join('\n'),
    files: {
      '1/model.js': "throw new Error('VOCAB_PATH is not set');\nexport default class Model {}\n",
    },
  });
  addModel(repo, 'syntax_py', {
    config: ['name: "syntax_py"', 'backend: "python"', ...io].join('\n'),
    files: { '1/model.py': 'class TritonPythonModel:\n    def execute(self, requests)\n        return []\n' },
  });
  return repo;
}

const modeRequest = (mode: string, outputs?: string[]) => ({
  inputs: [{ name: 'MODE', datatype: 'BYTES', shape: [1], data: [mode] }],
  ...(outputs && { outputs: outputs.map((name) => ({ name })) }),
});

interface InferBody {
  error?: string;
  outputs?: { name: string; data: number[] }[];
}

/**
 * Log entries (one per log call) that contain `text`, each message decoded from the JSON string Triton's
 * format writes (so a stack is several lines again).
 */
const entries = (s: TestServer, text: string): string[] =>
  s.logs
    .map((l) =>
      l.replace(/^([^\]]*\] )(".*")$/s, (_, head: string, q: string) => head + (JSON.parse(q) as string)),
    )
    .filter((l) => l.includes(text));

async function infer(
  s: TestServer,
  model: string,
  body: unknown,
): Promise<{ status: number; body: InferBody }> {
  const res = await post(`${s.url}/v2/models/${model}/infer`, body);
  return { status: res.status, body: res.json<InferBody>() };
}

async function load(s: TestServer, model: string): Promise<{ status: number; error: string }> {
  const res = await post(`${s.url}/v2/repository/models/${model}/load`, {});
  return { status: res.status, error: res.status === 200 ? '' : res.json<{ error: string }>().error };
}

describe('errors a model author can act on', () => {
  let s: TestServer;
  let repo: string;

  before(async () => {
    repo = repository();
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      ...pythonFlags(`nereid_errors_${process.pid}_`),
    ]);
    for (const m of ['errors_ts', 'errors_py']) assert.equal((await load(s, m)).status, 200, m);
  });

  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  it('a throwing JavaScript model: the error names model, version, instance and the user frame; the stack is logged once', async () => {
    const first = await infer(s, 'errors_ts', modeRequest('typeerror'));
    assert.equal(first.status, 500, 'INTERNAL, as before: the text got better, the status stayed');
    const error = first.body.error ?? '';
    assert.match(
      error,
      /^model 'errors_ts' version 1 instance 'errors_ts_0(_0)?': execute\(\) failed at 1\/helper\.ts:4:\d+: TypeError: Cannot read properties of undefined \(reading 'value'\)$/,
    );
    assert.ok(!error.includes(repo), 'no server path reaches the client');
    const logged = entries(s, error);
    assert.equal(logged.length, 1, 'logged at the default level');
    assert.match(logged[0], /\n\s+at lookup \(.*\/errors_ts\/1\/helper\.ts:4:\d+\)/, 'the whole stack, once');

    const second = await infer(s, 'errors_ts', modeRequest('typeerror'));
    assert.equal(second.body.error, error, 'the same error the second time');
    assert.equal(entries(s, error).length, 1, 'the second identical failure does not log the stack again');
    const ok = await infer(s, 'errors_ts', modeRequest('ok'));
    assert.equal(ok.status, 200, 'the model serves on');
  });

  it("a throwing Python model: Triton's text with the model, version and the user's frames; the traceback is logged once", async () => {
    const first = await infer(s, 'errors_py', modeRequest('keyerror'));
    assert.equal(first.status, 500, "INTERNAL, as Triton's Python backend answers");
    const error = first.body.error ?? '';
    assert.match(
      error,
      /^Failed to process the request\(s\) for model 'errors_py' version 1 instance 'errors_py_0(_0)?', message: KeyError: 'keyerror'\n\nAt:\n {2}1\/helper\.py\(7\): lookup\n {2}1\/model\.py\(\d+\): execute\n$/,
    );
    assert.ok(!error.includes(repo), 'no server path reaches the client');
    const firstLine = error.split('\n')[0];
    const logged = entries(s, firstLine);
    assert.equal(logged.length, 1);
    assert.match(logged[0], /Traceback \(most recent call last\):/);
    assert.ok(logged[0].includes(path.join(repo, 'errors_py/1/helper.py')), 'the log has the whole path');

    const second = await infer(s, 'errors_py', modeRequest('keyerror'));
    assert.equal(second.body.error, error);
    assert.equal(entries(s, firstLine).length, 1, 'the second identical failure does not log it again');
  });

  it('initialize() failures and TypeScript build errors are labelled load errors', async () => {
    const init = await load(s, 'init_error_ts');
    assert.notEqual(init.status, 200);
    assert.match(
      init.error,
      /model 'init_error_ts' version 1 instance 'init_error_ts_0(_0)?': initialize\(\) failed at 1\/model\.ts:3:\d+: RangeError: vocabulary size must be positive/,
    );
    const stacks = entries(s, 'initialize() failed at 1/model.ts:3').filter((l) => l.includes('\n    at '));
    assert.equal(stacks.length, 1, 'its stack is logged');

    const build = await load(s, 'syntax_ts');
    assert.notEqual(build.status, 200);
    assert.match(
      build.error,
      /model 'syntax_ts' version 1 instance 'syntax_ts_0(_0)?': TypeScript build failed at 1\/model\.ts:3:\d+: Unexpected ";"/,
    );
    assert.ok(!build.error.includes('initialize() failed'), 'a build error is not an initialize() failure');
    assert.ok(!build.error.includes(repo));

    const imported = await load(s, 'import_error_js');
    assert.match(
      imported.error,
      /model 'import_error_js' version 1 instance 'import_error_js_0(_0)?': import of the model module failed at 1\/model\.js:1:7: Error: VOCAB_PATH is not set/,
    );

    // A Python syntax error: Triton's text, no frame outside the model folder (importlib's are left out).
    const syntax = await load(s, 'syntax_py');
    assert.match(syntax.error, /SyntaxError: [^\n]*\(model\.py, line 2\)/);
    assert.ok(!syntax.error.includes('importlib') && !syntax.error.includes(repo), syntax.error);
    const syntaxLogged = entries(s, "model 'syntax_py' version 1 instance");
    assert.equal(syntaxLogged.length, 1);
    assert.match(syntaxLogged[0], /import of model\.py failed: SyntaxError/);
    assert.match(syntaxLogged[0], /importlib/, 'the log has the whole traceback');

    const py = await load(s, 'init_error');
    assert.notEqual(py.status, 200);
    assert.match(
      py.error,
      /TritonModelException: cannot initialize init_error: weights missing\n\nAt:\n {2}1\/model\.py\(8\): initialize\n/,
    );
    assert.ok(!py.error.includes(repo));
    const pyLogged = entries(s, "model 'init_error' version 1");
    assert.equal(pyLogged.length, 1);
    assert.match(pyLogged[0], /Traceback \(most recent call last\):/);
  });

  for (const model of ['errors_ts', 'errors_py']) {
    it(`${model}: an undeclared output and a missing requested output are warned about once; the responses go out`, async () => {
      const undeclared = `model '${model}' version 1 returned output 'OUTPUT', which its config does not declare`;
      for (let i = 0; i < 2; i++) {
        const r = await infer(s, model, modeRequest('undeclared'));
        assert.equal(r.status, 200);
        assert.deepEqual(r.body.outputs?.map((o) => o.name).sort(), ['EXTRA', 'OUT']);
      }
      const warned = entries(s, undeclared);
      assert.equal(warned.length, 1, 'once per model version');
      assert.match(warned[0], /^W/, 'a warning');
      assert.match(warned[0], /--strict-model-outputs=true/);

      const missing = `model '${model}' version 1 returned no output 'EXTRA', which the request asked for`;
      for (let i = 0; i < 2; i++) {
        const r = await infer(s, model, modeRequest('missing', ['OUT', 'EXTRA']));
        assert.equal(r.status, 200);
        assert.deepEqual(
          r.body.outputs?.map((o) => o.name),
          ['OUT'],
        );
      }
      assert.equal(entries(s, missing).length, 1);
      // Asking only for what the model sends is no mistake.
      const only = await infer(s, model, modeRequest('missing', ['OUT']));
      assert.equal(only.status, 200);
      assert.equal(entries(s, missing).length, 1);
    });
  }

  for (const model of ['errors_ts', 'errors_py']) {
    it(`${model}: an output with another datatype or shape than its config: the core warns once (Python: as Triton sends it)`, async () => {
      const jsDtype =
        "JavaScript model 'errors_ts' sent output 'OUT' as INT64, but its config declares INT32";
      if (model === 'errors_ts') {
        // The JavaScript backend (Nereid's own, no Triton behaviour to keep) refuses another datatype itself.
        const r = await infer(s, model, modeRequest('dtype'));
        assert.equal(r.status, 500);
        assert.equal(r.body.error, jsDtype);
      } else {
        for (let i = 0; i < 2; i++) {
          const r = await infer(s, model, modeRequest('dtype'));
          assert.equal(r.status, 200);
          const out = r.body.outputs?.find((o) => o.name === 'OUT') as { datatype?: string } | undefined;
          assert.equal(out?.datatype, 'INT64', "the model's datatype, as Triton's Python backend passes it");
        }
        const dtype = `model '${model}' version 1 returned output 'OUT' as INT64, but its config declares TYPE_INT32`;
        const warned = entries(s, dtype);
        assert.equal(warned.length, 1, 'once per model version');
        assert.match(warned[0], /^W/);
        assert.match(warned[0], /--strict-model-outputs=true/);
      }

      for (let i = 0; i < 2; i++) {
        const r = await infer(s, model, modeRequest('shape'));
        assert.equal(r.status, 200);
        const out = r.body.outputs?.find((o) => o.name === 'OUT') as { shape?: number[] } | undefined;
        assert.deepEqual(out?.shape, [2]);
      }
      const shape = `model '${model}' version 1 returned output 'OUT' with shape [2], but its config expects [1]`;
      assert.equal(entries(s, shape).length, 1);
    });
  }

  it("errors_py: an array no datatype holds (complex64) fails its request with Triton's text; the model goes on serving", async () => {
    // Triton's pb_utils.Tensor raises `NumPy dtype is not supported.` (test/differential/test_diff_outputs.py).
    const r = await infer(s, 'errors_py', modeRequest('nodtype'));
    assert.equal(r.status, 500);
    assert.match(
      r.body.error ?? '',
      /message: TritonModelException: NumPy dtype is not supported\. Tensor 'OUT' is complex64;/,
    );
    assert.match(r.body.error ?? '', /1\/model\.py\(\d+\): execute/);
    const ok = await infer(s, 'errors_py', modeRequest('ok'));
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body.outputs?.find((o) => o.name === 'OUT')?.data, [1]);
  });

  it('errors_ts: a hand-made output whose bytes do not fit its shape fails its request (500); the model goes on serving', async () => {
    const r = await infer(s, 'errors_ts', modeRequest('badbytes'));
    assert.equal(r.status, 500);
    assert.equal(
      r.body.error,
      "output of JavaScript model 'errors_ts' 'OUT': 12 bytes do not fit INT32 [4] (16 expected)",
    );
    const ok = await infer(s, 'errors_ts', modeRequest('ok'));
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body.outputs?.find((o) => o.name === 'OUT')?.data, [1]);
  });
});

describe('--strict-model-outputs=true', () => {
  let s: TestServer;
  let repo: string;

  before(async () => {
    repo = repository();
    s = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=errors_ts',
      '--load-model=errors_py',
      '--strict-model-outputs=true',
      ...pythonFlags(`nereid_strict_${process.pid}_`),
    ]);
  });

  after(async () => {
    await s?.stop();
    removeRepository(repo);
  });

  for (const model of ['errors_ts', 'errors_py']) {
    it(`${model}: an undeclared or a missing output, another datatype or shape, fails the request with INTERNAL`, async () => {
      const undeclared = await infer(s, model, modeRequest('undeclared'));
      assert.equal(undeclared.status, 500);
      assert.equal(
        undeclared.body.error,
        `model '${model}' version 1 returned output 'OUTPUT', which its config does not declare (declared: 'OUT', 'EXTRA') (--strict-model-outputs=true)`,
      );
      const missing = await infer(s, model, modeRequest('missing'));
      assert.equal(missing.status, 500);
      assert.equal(
        missing.body.error,
        `model '${model}' version 1 returned no output 'EXTRA', which the request asked for (--strict-model-outputs=true)`,
      );
      const dtype = await infer(s, model, modeRequest('dtype'));
      assert.equal(dtype.status, 500);
      assert.equal(
        dtype.body.error,
        model === 'errors_ts'
          ? "JavaScript model 'errors_ts' sent output 'OUT' as INT64, but its config declares INT32"
          : `model '${model}' version 1 returned output 'OUT' as INT64, but its config declares TYPE_INT32 (--strict-model-outputs=true)`,
      );
      const shape = await infer(s, model, modeRequest('shape'));
      assert.equal(shape.status, 500);
      assert.equal(
        shape.body.error,
        `model '${model}' version 1 returned output 'OUT' with shape [2], but its config expects [1] (--strict-model-outputs=true)`,
      );
      const ok = await infer(s, model, modeRequest('ok'));
      assert.equal(ok.status, 200);
    });
  }
});
