/**
 * `nereid init`: the real command (bin/nereid.js) scaffolds models for every backend into a temporary
 * project whose node_modules/nereid-server is this checkout (what `npm install nereid-server` gives a user); each
 * scaffold's own test passes (the model loads and answers through the in-process API), the printed curl
 * lines work against a server on the scaffolded repository, the generated Python passes mypy --strict and
 * ruff, and bad names and existing folders are refused without writing anything.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, post, startServer } from './harness.js';
import { VENV_PYTHON } from './python-support.js';

const run = promisify(execFile);
const NEREID = path.join(ROOT, 'bin/nereid.js');

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function nereid(cwd: string, args: string[]): Promise<Result> {
  try {
    const { stdout, stderr } = await run(process.execPath, [NEREID, ...args], { cwd });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The environment of a user's shell: not this test runner's (a child `node --test` would report to it). */
function userEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

/** A user's project: an empty folder whose node_modules/nereid-server is this checkout. */
function project(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-init-'));
  mkdirSync(path.join(dir, 'node_modules'));
  symlinkSync(ROOT, path.join(dir, 'node_modules', 'nereid-server'), 'dir');
  return dir;
}

/** The JSON body of the curl line `nereid init` printed. */
function printedCurl(stdout: string): { path: string; body: string } {
  const m = /curl [^\n]*localhost:8000(\/v2\/[^\s]+) -d '([^']+)'/.exec(stdout);
  assert.ok(m, `a curl line in:\n${stdout}`);
  return { path: m[1], body: m[2] };
}

const VARIANTS = [
  { name: 'js_model', backend: 'javascript', decoupled: false, file: '1/model.ts' },
  { name: 'js_stream', backend: 'javascript', decoupled: true, file: '1/model.ts' },
  { name: 'py_model', backend: 'python', decoupled: false, file: '1/model.py' },
  { name: 'py_stream', backend: 'python', decoupled: true, file: '1/model.py' },
  { name: 'onnx_model', backend: 'onnxruntime', decoupled: false, file: '1/model.onnx' },
] as const;

void test('nereid init scaffolds a model for each backend whose own test passes, and the printed calls answer', async () => {
  const dir = project();
  try {
    const outputs = new Map<string, string>();
    for (const v of VARIANTS) {
      const r = await nereid(dir, [
        'init',
        v.name,
        `--backend=${v.backend}`,
        ...(v.decoupled ? ['--decoupled'] : []),
      ]);
      assert.equal(r.code, 0, r.stderr);
      outputs.set(v.name, r.stdout);
      const modelDir = path.join(dir, 'model_repository', v.name);
      for (const f of ['config.pbtxt', v.file, `test_${v.name}.mjs`]) {
        assert.ok(existsSync(path.join(modelDir, f)), `${v.name}/${f} written`);
      }
      assert.match(r.stdout, /npx nereid --model-repository=\.\/model_repository --watch/);
      assert.doesNotMatch(r.stdout, /npm install/, 'the project has nereid-server already');
      assert.match(r.stdout, new RegExp(`node --test model_repository/${v.name}/test_${v.name}\\.mjs`));
      if (v.backend === 'javascript') {
        assert.match(readFileSync(path.join(modelDir, v.file), 'utf8'), /from 'nereid-server';/);
      }
      if (v.backend === 'python') {
        const py = readFileSync(path.join(modelDir, v.file), 'utf8');
        assert.match(py, /import triton_python_backend_utils as pb_utils/);
        assert.match(
          py,
          /class TritonPythonModel:[\s\S]*def initialize[\s\S]*def execute[\s\S]*def finalize/,
        );
        if (v.decoupled) assert.match(py, /get_response_sender\(\)/);
      }
    }

    // Each scaffold's test, run as the user would run it (its expectation is the model's real answer).
    for (const v of VARIANTS) {
      const test = path.join('model_repository', v.name, `test_${v.name}.mjs`);
      const r = await run(process.execPath, ['--test', test], { cwd: dir, env: userEnv() }).catch(
        (err: { stdout?: string; stderr?: string }) => {
          assert.fail(`${test} failed:\n${err.stdout ?? ''}\n${err.stderr ?? ''}`);
        },
      );
      assert.match(r.stdout, /# pass 1/);
    }

    // The printed curl lines, against a server on the scaffolded repository.
    const server = await startServer([
      `--model-repository=${path.join(dir, 'model_repository')}`,
      `--backend-config=python,python-executable=${VENV_PYTHON}`,
    ]);
    try {
      for (const v of VARIANTS) {
        const call = printedCurl(outputs.get(v.name) ?? '');
        const res = await post(server.url + call.path, call.body);
        assert.equal(res.status, 200, `${v.name}: ${res.body.toString()}`);
        const expected = v.backend === 'onnxruntime' ? [1, 2, 3, 4] : [2, 4, 6, 8];
        if (v.decoupled) {
          // Server-sent events: one data line per response.
          const values = res.body
            .toString()
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => JSON.parse(l.slice(6)) as { OUTPUT0?: number | number[] })
            .filter((e) => e.OUTPUT0 !== undefined)
            .flatMap((e) => e.OUTPUT0 as number | number[]);
          assert.deepEqual(values, expected, `${v.name} streamed`);
        } else {
          const body = res.json<{ outputs: { name: string; data: number[] }[] }>();
          assert.deepEqual(body.outputs.find((o) => o.name === 'OUTPUT0')?.data, expected, v.name);
        }
      }
    } finally {
      await server.stop();
    }

    // The generated Python is typed and clean: mypy --strict against Nereid's pb_utils, and ruff.
    for (const v of VARIANTS.filter((x) => x.backend === 'python')) {
      const file = path.join(dir, 'model_repository', v.name, v.file);
      await run(path.join(ROOT, '.venv/bin/mypy'), ['--strict', '--no-incremental', file], {
        cwd: dir,
        env: { ...process.env, MYPYPATH: path.join(ROOT, 'python') },
      }).catch((err: { stdout?: string }) => assert.fail(`mypy ${v.name}: ${err.stdout ?? ''}`));
      await run(
        path.join(ROOT, '.venv/bin/ruff'),
        ['check', '--config', path.join(ROOT, 'pyproject.toml'), file],
        {
          cwd: dir,
        },
      ).catch((err: { stdout?: string }) => assert.fail(`ruff ${v.name}: ${err.stdout ?? ''}`));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('nereid init outside a project with Nereid says how to install it, never the unrelated `nereid`', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-init-bare-'));
  try {
    const r = await nereid(dir, ['init', 'm', '--backend=javascript']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(
      existsSync(path.join(dir, 'model_repository', 'm', 'config.pbtxt')),
      'written in the current folder',
    );
    // Run from this checkout, the install step is from its path (the package is not on npm under its name yet).
    assert.ok(
      r.stdout.includes(`npm install ${ROOT}`) || r.stdout.includes(`npm install '${ROOT}'`),
      r.stdout,
    );
    assert.doesNotMatch(r.stdout, /npm install nereid\b(?!-)/);
    assert.ok(r.stdout.indexOf('npm install') < r.stdout.indexOf('npx nereid'), 'install comes first');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('nereid init refuses bad names and existing folders, and --force replaces only its own files', async () => {
  const dir = project();
  try {
    for (const bad of ['../escape', 'a/b', '..', '.hidden', 'white space', '']) {
      const r = await nereid(dir, ['init', bad, '--backend=javascript']);
      assert.equal(r.code, 2, `'${bad}' refused`);
      assert.match(r.stderr, /^error: /);
    }
    assert.equal(existsSync(path.join(dir, 'model_repository')), false, 'nothing written for bad names');
    assert.equal(existsSync(path.join(dir, 'escape')), false);

    const missing = await nereid(dir, ['init', 'm']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--backend is required: one of javascript, python, onnxruntime/);
    const onnxStream = await nereid(dir, ['init', 'm', '--backend=onnxruntime', '--decoupled']);
    assert.equal(onnxStream.code, 2);
    assert.match(onnxStream.stderr, /--decoupled is for javascript and python models/);

    const repo = path.join(dir, 'repo');
    assert.equal((await nereid(dir, ['init', 'm', '--backend=javascript', '--repository', repo])).code, 0);
    const model = path.join(repo, 'm', '1', 'model.ts');
    writeFileSync(model, '// my edits\n');
    writeFileSync(path.join(repo, 'm', 'notes.txt'), 'mine');
    const again = await nereid(dir, ['init', 'm', '--backend=python', '--repository', repo]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists; nothing was written \(pass --force/);
    assert.equal(readFileSync(model, 'utf8'), '// my edits\n', 'the user file is untouched');
    assert.equal(existsSync(path.join(repo, 'm', '1', 'model.py')), false);

    // --force: the scaffold's files are written again; a symlink where one goes is replaced, not followed.
    const outside = path.join(dir, 'outside.txt');
    writeFileSync(outside, 'keep me');
    rmSync(path.join(repo, 'm', 'config.pbtxt'));
    symlinkSync(outside, path.join(repo, 'm', 'config.pbtxt'));
    const forced = await nereid(dir, ['init', 'm', '--backend=javascript', '--repository', repo, '--force']);
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(readFileSync(model, 'utf8'), /export default class DoublingModel/);
    assert.equal(readFileSync(path.join(repo, 'm', 'notes.txt'), 'utf8'), 'mine', 'other files stay');
    assert.equal(readFileSync(outside, 'utf8'), 'keep me', 'the symlink target is not written');
    assert.match(readFileSync(path.join(repo, 'm', 'config.pbtxt'), 'utf8'), /backend: "javascript"/);

    const help = await nereid(dir, ['init', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: nereid init <model_name> --backend javascript\|python\|onnxruntime/);
    const serverHelp = await nereid(dir, ['--help']);
    assert.match(serverHelp.stdout, /nereid init <model_name>/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The commands of the "Next:" list `nereid init` printed, in order (two-space indented lines). */
function nextSteps(stdout: string): string[] {
  const after = stdout.slice(stdout.indexOf('\nNext:\n') + 7);
  return after
    .split('\n')
    .filter((l) => /^ {2}\S/.test(l))
    .map((l) => l.slice(2));
}

void test(
  'nereid init outside the repository: the printed steps, run as printed in a new folder, install, serve, answer and pass',
  { timeout: 900_000 },
  async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-init-steps-'));
    // The user's shell: python3 is one with pytest and numpy (the project's test venv), curl on PATH.
    const env = { ...userEnv(), PATH: `${path.join(ROOT, '.venv/bin')}:${process.env.PATH ?? ''}` };
    const sh = (command: string): Promise<{ stdout: string; stderr: string }> =>
      run('bash', ['-c', command], { cwd: dir, env, maxBuffer: 64 * 1024 * 1024, timeout: 400_000 }).catch(
        (err: { stdout?: string; stderr?: string }) =>
          assert.fail(`'${command}' failed:\n${err.stdout ?? ''}\n${err.stderr ?? ''}`),
      );
    try {
      const steps: string[] = [];
      for (const [name, backend] of [
        ['ts_model', 'javascript'],
        ['py_model', 'python'],
      ] as const) {
        const r = await nereid(dir, ['init', name, `--backend=${backend}`]);
        assert.equal(r.code, 0, r.stderr);
        for (const step of nextSteps(r.stdout)) if (!steps.includes(step)) steps.push(step);
      }
      assert.ok(
        existsSync(path.join(dir, 'model_repository/ts_model/tsconfig.json')),
        'TypeScript gets a tsconfig.json',
      );
      assert.ok(
        existsSync(path.join(dir, 'model_repository/py_model/test_py_model.py')),
        'Python gets a pytest test',
      );
      const install = steps.find((s) => s.startsWith('npm install'));
      assert.ok(
        install !== undefined && (install.endsWith(ROOT) || install.endsWith(`'${ROOT}'`)),
        steps.join('\n'),
      );
      assert.ok(!steps.some((s) => /npm install nereid\b(?!-)/.test(s)), 'never the unrelated npm package');
      assert.deepEqual(
        steps.map((s) => s.split(' ').slice(0, 2).join(' ')),
        ['npm install', 'npx nereid', 'curl -X', 'node --test', 'curl -X', 'node --test', 'python3 -m'],
        steps.join('\n'),
      );

      await sh(install);
      // The serve step as printed, on free ports instead of 8000/8001/8002 (the machine is shared); the
      // curl lines then go to the port it took.
      const serve = steps.find((s) => s.startsWith('npx nereid'))!;
      assert.equal(serve, 'npx nereid --model-repository=./model_repository --watch');
      // Its own process group, so that Ctrl-C's SIGINT reaches npx, its shell and the server at once.
      const server = spawn(
        'bash',
        [
          '-c',
          `exec ${serve} --http-port=0 --grpc-port=0 --metrics-port=0 --backend-config=python,python-executable=${VENV_PYTHON}`,
        ],
        { cwd: dir, env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      const exited = new Promise((resolve) => server.once('exit', resolve));
      let log = '';
      try {
        const port = await new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no HTTP port:\n${log}`)), 300_000);
          server.stderr.on('data', (d: Buffer) => {
            log += d.toString();
            const m = /Started HTTPService at [^\s"]*:(\d+)/.exec(log);
            if (m) {
              clearTimeout(timer);
              resolve(Number(m[1]));
            }
          });
          server.once('exit', (code) => reject(new Error(`the server exited (${code}):\n${log}`)));
        });
        for (const curl of steps.filter((s) => s.startsWith('curl'))) {
          const { stdout } = await sh(curl.replace('localhost:8000', `localhost:${port}`));
          const body = JSON.parse(stdout) as { outputs?: { name: string; data: number[] }[] };
          assert.deepEqual(body.outputs?.find((o) => o.name === 'OUTPUT0')?.data, [2, 4, 6, 8], stdout);
        }
      } finally {
        process.kill(-server.pid!, 'SIGINT');
        const kill = setTimeout(() => process.kill(-server.pid!, 'SIGKILL'), 60_000);
        await exited;
        clearTimeout(kill);
      }
      for (const step of steps.filter(
        (s) => s.startsWith('node --test') || s.startsWith('python3 -m pytest'),
      )) {
        const { stdout } = await sh(step);
        assert.match(stdout, /# pass 1|1 passed/, `${step}:\n${stdout}`);
      }
      // The tsconfig.json makes the model's imports resolve for an editor: tsc (this checkout's) agrees.
      await sh(`node ${path.join(ROOT, 'node_modules/typescript/bin/tsc')} -p model_repository/ts_model`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

void test("nereid init inside Nereid's own checkout writes nothing unless the folder is named", async () => {
  const r = await nereid(path.join(ROOT, 'examples'), ['init', 'stray_model', '--backend=javascript']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /inside Nereid's own checkout .*nothing was written.*--repository=<dir>/);
  assert.equal(existsSync(path.join(ROOT, 'examples/model_repository/stray_model')), false);
  assert.equal(existsSync(path.join(ROOT, 'examples/stray_model')), false);
});

void test('nereid init --backend llamacpp scaffolds a language model whose test and printed generate call answer', async () => {
  const tiny = path.join(ROOT, '.cache/llm-models/current/tiny-llama.gguf');
  assert.ok(existsSync(tiny), `${tiny} is missing: scripts/setup-llm-models.sh writes it`);
  const dir = project();
  try {
    // Refused before anything is written: no such file, not a GGUF file, --decoupled, --gguf elsewhere.
    const notGguf = path.join(dir, 'notes.txt');
    writeFileSync(notGguf, 'not a model');
    for (const [args, code, reason] of [
      [['--gguf', path.join(dir, 'missing.gguf')], 1, /cannot be opened; nothing was written/],
      [['--gguf', notGguf], 1, /is not a GGUF file/],
      [['--decoupled'], 2, /a llamacpp model always streams/],
    ] as const) {
      const r = await nereid(dir, ['init', 'llm', '--backend=llamacpp', ...args]);
      assert.equal(r.code, code, r.stderr);
      assert.match(r.stderr, reason);
    }
    const jsGguf = await nereid(dir, ['init', 'm', '--backend=javascript', '--gguf', tiny]);
    assert.equal(jsGguf.code, 2);
    assert.match(jsGguf.stderr, /--gguf is for llamacpp models/);
    assert.equal(existsSync(path.join(dir, 'model_repository')), false, 'nothing written');

    // Without --gguf: the config and the settings, and where the model goes.
    const bare = await nereid(dir, ['init', 'empty', '--backend=llamacpp']);
    assert.equal(bare.code, 0, bare.stderr);
    assert.match(bare.stdout, /Put your GGUF model at model_repository\/empty\/1\/model\.gguf/);
    assert.equal(existsSync(path.join(dir, 'model_repository/empty/1/model.gguf')), false);

    const r = await nereid(dir, ['init', 'llm', '--backend=llamacpp', `--gguf=${tiny}`]);
    assert.equal(r.code, 0, r.stderr);
    const modelDir = path.join(dir, 'model_repository', 'llm');
    assert.deepEqual(readFileSync(path.join(modelDir, '1/model.gguf')), readFileSync(tiny));
    assert.match(readFileSync(path.join(modelDir, 'config.pbtxt'), 'utf8'), /backend: "llamacpp"/);
    const settings = JSON.parse(readFileSync(path.join(modelDir, '1/model.json'), 'utf8')) as Record<
      string,
      number
    >;
    assert.equal(settings.parallel_sequences, 4);
    // Small and quick on a busy test machine; the edit is what a user would do.
    writeFileSync(
      path.join(modelDir, '1/model.json'),
      JSON.stringify({ ...settings, context_size: 256, threads: 1 }),
    );

    const test = path.join('model_repository', 'llm', 'test_llm.mjs');
    const ran = await run(process.execPath, ['--test', test], { cwd: dir, env: userEnv() }).catch(
      (err: { stdout?: string; stderr?: string }) =>
        assert.fail(`${test} failed:\n${err.stdout ?? ''}\n${err.stderr ?? ''}`),
    );
    assert.match(ran.stdout, /# pass 1/);

    const server = await startServer([
      `--model-repository=${path.join(dir, 'model_repository')}`,
      '--model-control-mode=explicit',
      '--load-model=llm',
    ]);
    try {
      const call = printedCurl(r.stdout);
      assert.equal(call.path, '/v2/models/llm/generate');
      const res = await post(server.url + call.path, call.body);
      assert.equal(res.status, 200, res.body.toString());
      assert.ok(res.json<{ text_output: string }>().text_output.length > 'The capital of France is'.length);
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
