/**
 * Docs that hold: every fenced code block of README.md, docs/*.md and the READMEs under examples/, bench/ and
 * deploy/ is checked against the real thing.
 * - TypeScript / JavaScript: type-checked together under `strict` against the package's public exports
 *   (`nereid-server`, `nereid-server/sdk`, `nereid-server/client`, resolved to this checkout's build through a
 *   node_modules link),
 *   then run: programs as child processes against a test server on the example repository, model files
 *   (`// <model>/1/model.ts`) loaded with the config block of the same name and sent one request.
 * - Shell: every `nereid` command line is parsed with the real flag parser; `npm run <script>` names a
 *   script of package.json.
 * - Python: compiled; the ones not marked `no-run` run against the test server with .venv's tritonclient.
 * - protobuf (config.pbtxt): parsed with Nereid's config parser; an untagged block that is a config must say
 *   so. json / yaml: parsed.
 * Blocks address the server as localhost:8000 (HTTP) / :8001 (gRPC) / :8002 (metrics), the defaults; the
 * test rewrites those to its own ports. The convention for blocks that are not checked or not run is in
 * docs/architecture.md ("Code blocks in the docs"). Failures name the file and line of the Markdown.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import YAML from 'yaml';
import { HttpClient, GrpcClient, InferInput, type InferenceClient } from '../../src/client/index.js';
import type { DataType } from '../../src/common/datatype.js';
import { parseFlags } from '../../src/compose/flags.js';
import { parseModelConfigText } from '../../src/model-config/index.js';
import type { ModelConfig } from '../../src/model-config/model-config.js';
import { EXAMPLES, startServer, type TestServer } from '../integration/harness.js';
import {
  ATTRIBUTES,
  extractBlocks,
  kindOf,
  nereidArguments,
  readBlocks,
  shellCommands,
  where,
  type CodeBlock,
} from './markdown-blocks.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const VENV_PYTHON = path.join(ROOT, '.venv/bin/python');
/** A guard against a block that never ends, not a speed expectation. */
const RUN_TIMEOUT_MS = 300_000;

const blocks = readBlocks(ROOT);
const has = (b: CodeBlock, attr: string): boolean => b.attrs.includes(attr);
const isScript = (b: CodeBlock): boolean => kindOf(b) === 'typescript' || kindOf(b) === 'javascript';
/**
 * `// double_ts/1/model.ts` (or `# add_sub/1/model.py`) as the first line: a model file, run by loading it
 * as a model with the config block of that name.
 */
const MODEL_FILE = /^(?:\/\/|#)\s*([A-Za-z0-9_.-]+)\/(\d+)\/(model\.(?:ts|mts|js|mjs|py))\b/;
const modelFileOf = (b: CodeBlock): RegExpExecArray | null => MODEL_FILE.exec(b.text.split('\n')[0]);
/** A Python block that is model code (it imports pb_utils), which only a stub can run. */
const isPythonModelCode = (b: CodeBlock): boolean =>
  modelFileOf(b) !== null ||
  /^\s*import\s+triton_python_backend_utils\b/m.test(b.text) ||
  /\bpb_utils\./.test(b.text);
/** Type-check errors of each TypeScript/JavaScript block, compile errors of each Python block. */
const tsErrors = new Map<CodeBlock, string[]>();
const pyErrors = new Map<CodeBlock, string>();

function run(
  file: string,
  args: string[],
  opts: { cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: opts.cwd ?? ROOT, timeout: RUN_TIMEOUT_MS, maxBuffer: 16 << 20, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr: err && !stderr ? String(err.message) : stderr });
      },
    );
  });
}

const tail = (s: string, n = 40): string => s.trim().split('\n').slice(-n).join('\n');

/** localhost:8000/8001/8002 → the test server's ports. */
function withPorts(text: string, ports: { http: number; grpc: number; metrics: number }): string {
  const by: Record<string, number> = { '8000': ports.http, '8001': ports.grpc, '8002': ports.metrics };
  return text.replace(/localhost:(800[012])\b/g, (_, p: string) => `127.0.0.1:${by[p]}`);
}

// ---- the extractor itself --------------------------------------------------------------------------------

describe('docs code blocks: the extractor', () => {
  it('finds fences with their language, attributes and first line, indented ones included', () => {
    const md =
      'x\n```ts no-run\nconst a = 1;\n```\n\n1. item\n   ```protobuf\n   name: "m"\n   ```\n````\n```\n````\n';
    const got = extractBlocks('d.md', md);
    assert.deepEqual(
      got.map((b) => [b.line, b.lang, b.attrs, b.text]),
      [
        [3, 'ts', ['no-run'], 'const a = 1;'],
        [8, 'protobuf', [], 'name: "m"'],
        [11, '', [], '```'],
      ],
    );
  });

  it('splits shell text into commands and finds nereid command lines', () => {
    const cmds = shellCommands(
      [
        'npm ci && npm start   # a comment',
        'nereid --model-repository=/m \\',
        "  --trace-config 'triton,file=/tmp/x y' [--http-port=8000]",
        'python - <<PY',
        'nereid --not-a-command-line',
        'PY',
      ].join('\n'),
    );
    assert.deepEqual(
      cmds.map((c) => [c.lineInBlock, c.words]),
      [
        [1, ['npm', 'ci']],
        [1, ['npm', 'start']],
        [
          2,
          ['nereid', '--model-repository=/m', '--trace-config', 'triton,file=/tmp/x y', '[--http-port=8000]'],
        ],
        [4, ['python', '-']],
      ],
    );
    assert.deepEqual(nereidArguments(cmds[2].words), [
      '--model-repository=/m',
      '--trace-config',
      'triton,file=/tmp/x y',
      '--http-port=8000',
    ]);
    assert.equal(nereidArguments(['npm', 'start']), undefined);
    // A quoted argument may span lines (README's curl -d '{...}'); 2>&1 stays a word.
    assert.deepEqual(
      shellCommands('curl -d \'{"a":\n  [1]}\' localhost:8000/x 2>&1 | grep -i ok\nnpm test').map((c) => [
        c.lineInBlock,
        c.words,
      ]),
      [
        [1, ['curl', '-d', '{"a":\n  [1]}', 'localhost:8000/x', '2>&1']],
        [2, ['grep', '-i', 'ok']],
        [3, ['npm', 'test']],
      ],
    );
    assert.deepEqual(nereidArguments(['npx', 'nereid', '--help']), ['--help']);
  });

  it('reads README.md and every docs page, and finds blocks of each kind', () => {
    const files = new Set(blocks.map((b) => b.file));
    assert.ok(files.has('README.md') && files.has('docs/client.md'));
    for (const kind of ['typescript', 'javascript', 'shell', 'python', 'pbtxt', 'json'] as const) {
      assert.ok(
        blocks.some((b) => kindOf(b) === kind),
        `no ${kind} block found`,
      );
    }
  });
});

// ---- convention ------------------------------------------------------------------------------------------

describe('docs code blocks: the convention', () => {
  it('uses only the known attributes (no-run, fragment), on blocks that are checked', () => {
    const bad = blocks.flatMap((b) =>
      b.attrs
        .filter((a) => !(ATTRIBUTES as readonly string[]).includes(a))
        .map(
          (a) =>
            `${where(b)}: unknown attribute '${a}' after \`\`\`${b.lang} (known: ${ATTRIBUTES.join(', ')})`,
        ),
    );
    assert.equal(bad.length, 0, bad.join('\n'));
  });

  it('tags every block that is a model configuration as protobuf, so it gets parsed', () => {
    const untagged = blocks.filter((b) => {
      if (b.lang !== '' && b.lang !== 'text') return false;
      if (!/^\s*[a-z_]+\s*[:{[<]/.test(b.text)) return false;
      try {
        parseModelConfigText(b.text, where(b));
        return true;
      } catch {
        return false;
      }
    });
    const problems = untagged.map((b) => `${where(b)}: a config.pbtxt block: open it with \`\`\`protobuf`);
    assert.equal(problems.length, 0, problems.join('\n'));
  });
});

// ---- TypeScript and JavaScript ---------------------------------------------------------------------------

describe('docs code blocks: TypeScript and JavaScript', () => {
  const scripts = blocks.filter(isScript);
  const checked = scripts.filter((b) => !has(b, 'fragment'));
  let work: string;
  const fileOf = new Map<CodeBlock, string>();
  const errors = tsErrors;

  before(() => {
    work = mkdtempSync(path.join(os.tmpdir(), 'nereid-doc-blocks-'));
    // The package as a user's project sees it: node_modules/nereid-server is this checkout (its package.json
    // exports, dist/ build and dependencies), so `nereid-server`, `nereid-server/sdk` and
    // `nereid-server/client` resolve as they would after `npm install nereid-server`.
    // The checkout's other packages are linked too, so a block may import what a Nereid user has.
    mkdirSync(path.join(work, 'node_modules'));
    symlinkSync(ROOT, path.join(work, 'node_modules/nereid-server'), 'dir');
    for (const entry of readdirSync(path.join(ROOT, 'node_modules'))) {
      if (entry.startsWith('.') || entry === 'nereid-server') continue;
      symlinkSync(path.join(ROOT, 'node_modules', entry), path.join(work, 'node_modules', entry), 'dir');
    }
    writeFileSync(path.join(work, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    for (const b of checked) {
      const base = `${b.file.replace(/[^A-Za-z0-9]+/g, '_')}_L${b.line}`;
      const file = path.join(work, kindOf(b) === 'typescript' ? `${base}.ts` : `${base}.mjs`);
      writeFileSync(file, b.text + '\n');
      fileOf.set(b, file);
    }
    const options: ts.CompilerOptions = {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      moduleDetection: ts.ModuleDetectionKind.Force,
      lib: ['lib.es2023.d.ts'],
      types: ['node'],
      typeRoots: [path.join(ROOT, 'node_modules/@types')],
      allowJs: true,
      checkJs: true,
      skipLibCheck: true,
      esModuleInterop: true,
    };
    const program = ts.createProgram([...fileOf.values()], options);
    const byFile = new Map([...fileOf].map(([b, f]) => [path.resolve(f), b]));
    for (const d of ts.getPreEmitDiagnostics(program)) {
      const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
      const b = d.file ? byFile.get(path.resolve(d.file.fileName)) : undefined;
      if (!b || !d.file || d.start === undefined) {
        // A problem outside the blocks (options, a broken build) fails every block: say it once per block.
        for (const each of checked)
          errors.set(each, [...(errors.get(each) ?? []), `TS${d.code}: ${message}`]);
        continue;
      }
      const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
      const list = errors.get(b) ?? [];
      list.push(`${where(b, line + 1)}:${character + 1}: TS${d.code}: ${message}`);
      errors.set(b, list);
    }
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  for (const b of scripts) {
    const title = `${where(b)} \`\`\`${[b.lang, ...b.attrs].join(' ')}`;
    if (has(b, 'fragment')) {
      it(`${title}: a fragment (not checked)`, { skip: 'marked fragment' }, () => {});
      continue;
    }
    it(`${title} type-checks under strict`, () => {
      const list = errors.get(b) ?? [];
      assert.equal(list.length, 0, `${where(b)}: the block does not type-check:\n${list.join('\n')}`);
    });
  }

  // Programs run against the test server; model files are loaded as models (below).
  const programs = checked.filter((b) => !has(b, 'no-run') && !modelFileOf(b));
  describe('run against a server on examples/model_repository', () => {
    let ports: { http: number; grpc: number; metrics: number };
    before(async () => {
      if (programs.length === 0) return;
      ports = serverPorts(await startDocServer());
    });
    for (const b of programs) {
      it(`${where(b)} runs`, async () => {
        assert.equal(errors.get(b)?.length ?? 0, 0, `${where(b)}: not run, it does not type-check`);
        const source = withPorts(b.text, ports);
        const js =
          kindOf(b) === 'typescript'
            ? ts.transpileModule(source, {
                compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
                fileName: 'block.ts',
              }).outputText
            : source;
        const file = `${fileOf.get(b)!.replace(/\.(ts|mjs)$/, '')}.run.mjs`;
        writeFileSync(file, js);
        const r = await run(process.execPath, [file]);
        assert.equal(
          r.code,
          0,
          `${where(b)}: the block exited with ${r.code}:\n${tail(r.stderr || r.stdout)}`,
        );
      });
    }
  });
});

/** One request of ones (BYTES: "hello world") shaped by the config; every declared output must come back. */
async function answersOnce(b: CodeBlock, server: TestServer, config: ModelConfig): Promise<void> {
  const batch = config.max_batch_size > 0;
  const inputs = config.input
    .filter((i) => !i.optional)
    .map((i) => {
      const dims = [...(batch ? [1] : []), ...i.dims.map((d) => (d < 0 ? 2 : d))];
      const datatype = i.data_type.replace(/^TYPE_/, '').replace('STRING', 'BYTES') as DataType;
      const count = dims.reduce((p, d) => p * d, 1);
      const values =
        datatype === 'BYTES'
          ? new Array<string>(count).fill('hello world')
          : datatype === 'BOOL'
            ? new Array<boolean>(count).fill(true)
            : /INT64/.test(datatype)
              ? new Array<bigint>(count).fill(1n)
              : new Array<number>(count).fill(1);
      return new InferInput(i.name, dims, datatype).setData(values);
    });
  const decoupled = config.model_transaction_policy?.decoupled === true;
  if (!decoupled) {
    const client: InferenceClient = new HttpClient(server.url);
    try {
      const result = await client.infer(config.name, inputs).catch((err: unknown) => {
        assert.fail(`${where(b)}: the model answered with an error: ${(err as Error).message}`);
      });
      for (const o of config.output) {
        assert.ok(
          result.output(o.name),
          `${where(b)}: the model did not return its declared output '${o.name}'`,
        );
      }
    } finally {
      client.close();
    }
    return;
  }
  const grpc = new GrpcClient(`127.0.0.1:${server.running.grpc!.port}`);
  try {
    const stream = grpc.streamInfer();
    stream.send({ model: config.name, inputs, enableEmptyFinalResponse: true });
    const seen = new Set<string>();
    for await (const item of stream) {
      if (item.error) assert.fail(`${where(b)}: the model answered with an error: ${item.error.message}`);
      for (const o of item.result.outputs) seen.add(o.name);
      if (item.result.final) break;
    }
    for (const o of config.output) {
      assert.ok(
        seen.has(o.name),
        `${where(b)}: no response of the model carried its declared output '${o.name}'`,
      );
    }
  } finally {
    grpc.close();
  }
}

/** One server on the example repository for every block that runs, started by the first that needs it. */
let docServer: Promise<TestServer> | undefined;
function startDocServer(): Promise<TestServer> {
  docServer ??= startServer([
    `--model-repository=${EXAMPLES}`,
    '--model-control-mode=explicit',
    '--load-model=*',
    '--allow-client-shm=true',
  ]);
  return docServer;
}
after(async () => {
  if (docServer) await (await docServer).stop();
});

function serverPorts(s: TestServer): { http: number; grpc: number; metrics: number } {
  return { http: s.running.http!.port, grpc: s.running.grpc!.port, metrics: s.running.metrics?.port ?? 0 };
}

// ---- shell -----------------------------------------------------------------------------------------------

describe('docs code blocks: shell command lines', () => {
  const scripts = new Set(
    Object.keys(
      (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: object }).scripts,
    ),
  );
  for (const b of blocks.filter((x) => kindOf(x) === 'shell' && !has(x, 'fragment'))) {
    const commands = shellCommands(b.text);
    const lines = commands.filter((c) => nereidArguments(c.words) !== undefined);
    const npmRuns = commands
      .filter((c) => c.words[0] === 'npm' && ['run', 'start', 'test'].includes(c.words[1]))
      .map((c) => (c.words[1] === 'run' ? c : { ...c, words: ['npm', 'run', c.words[1]] }));
    const files = commands.filter((c) => ['bash', 'sh', 'node'].includes(c.words[0]) && c.words[1]);
    if (lines.length + npmRuns.length + files.length === 0) continue;
    it(`${where(b)} \`\`\`${b.lang}: nereid flags, npm scripts and files exist`, () => {
      const problems: string[] = [];
      for (const c of lines) {
        const args = nereidArguments(c.words)!;
        // `nereid <subcommand> ...` has flags of its own, not the server's.
        if (args[0] !== undefined && !args[0].startsWith('-')) continue;
        try {
          parseFlags(args, {});
        } catch (err) {
          problems.push(`${where(b, c.lineInBlock)}: ${(err as Error).message}`);
        }
      }
      for (const c of npmRuns) {
        if (!scripts.has(c.words[2]))
          problems.push(`${where(b, c.lineInBlock)}: no npm script '${c.words[2]}'`);
      }
      for (const c of files) {
        const f = c.words[1];
        if (
          f.startsWith('-') ||
          path.isAbsolute(f) ||
          !/\.(sh|js|mjs)$/.test(f) ||
          /^(bin\/nereid\.js)$/.test(f)
        ) {
          continue;
        }
        if (!existsSync(path.join(ROOT, f))) problems.push(`${where(b, c.lineInBlock)}: no file '${f}'`);
      }
      assert.equal(problems.length, 0, problems.join('\n'));
    });
  }

  // curl commands to the default ports run against the test server and must get a 2xx answer.
  const curlBlocks = blocks.filter(
    (x) =>
      kindOf(x) === 'shell' &&
      !has(x, 'fragment') &&
      !has(x, 'no-run') &&
      shellCommands(x.text).some((c) => isLocalCurl(c.words)),
  );
  for (const b of curlBlocks) {
    it(`${where(b)} \`\`\`${b.lang}: curl commands get a 2xx answer from a server on examples/model_repository`, async () => {
      const ports = serverPorts(await startDocServer());
      const problems: string[] = [];
      for (const c of shellCommands(b.text).filter((x) => isLocalCurl(x.words))) {
        const args = c.words.slice(1).map((w) => withPorts(w, ports));
        const r = await run('curl', ['-sS', '--fail-with-body', '--max-time', '120', ...args]);
        if (r.code !== 0) {
          problems.push(
            `${where(b, c.lineInBlock)}: curl exited with ${r.code}: ${tail(r.stderr + r.stdout, 10)}`,
          );
        }
      }
      assert.equal(problems.length, 0, problems.join('\n'));
    });
  }
});

/** `curl ... localhost:8000/...` (or :8001, :8002): a request to the server the docs start. */
function isLocalCurl(words: readonly string[]): boolean {
  return words[0] === 'curl' && words.some((w) => /^(https?:\/\/)?localhost:800[012]\b/.test(w));
}

// ---- Python ----------------------------------------------------------------------------------------------

describe('docs code blocks: Python', () => {
  const pythonBlocks = blocks.filter((b) => kindOf(b) === 'python' && !has(b, 'fragment'));
  const python = existsSync(VENV_PYTHON) ? VENV_PYTHON : 'python3';
  let work: string;
  const compileErrors = pyErrors;
  before(async () => {
    work = mkdtempSync(path.join(os.tmpdir(), 'nereid-doc-python-'));
    const files = pythonBlocks.map((b, i) => {
      const f = path.join(work, `block_${i}.py`);
      writeFileSync(f, b.text + '\n');
      return f;
    });
    // One interpreter compiles every block (compile(), as py_compile does, without writing .pyc files).
    const r = await run(python, [
      '-c',
      'import json, sys\n' +
        'out = {}\n' +
        'for f in sys.argv[1:]:\n' +
        '    try:\n' +
        '        compile(open(f).read(), f, "exec")\n' +
        '    except SyntaxError as e:\n' +
        '        out[f] = f"{e.lineno}:{e.offset}: {e.msg}"\n' +
        'print(json.dumps(out))\n',
      ...files,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as Record<string, string>;
    pythonBlocks.forEach((b, i) => {
      const e = out[files[i]];
      if (e !== undefined) {
        const [line, rest] = [Number(e.split(':')[0]), e.slice(e.indexOf(':') + 1)];
        compileErrors.set(b, `${where(b, line)}:${rest}`);
      }
    });
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });
  for (const b of pythonBlocks) {
    it(`${where(b)} \`\`\`python compiles`, () => {
      assert.equal(compileErrors.get(b), undefined, `${where(b)}: ${compileErrors.get(b)}`);
    });
  }

  // Model code (pb_utils) runs only inside a stub: model files are loaded as models below, the rest is
  // compiled only.
  const runnable = pythonBlocks.filter((b) => !has(b, 'no-run') && !isPythonModelCode(b));
  describe('run with tritonclient against a server on examples/model_repository', () => {
    let server: TestServer | undefined;
    let skip: string | undefined;
    before(async () => {
      if (runnable.length === 0) return;
      if (!existsSync(VENV_PYTHON)) {
        skip = 'no .venv (scripts/setup-python.sh makes it)';
        return;
      }
      server = await startDocServer();
    });
    for (const b of runnable) {
      it(`${where(b)} runs`, async (t) => {
        if (skip) return t.skip(skip);
        const file = path.join(work, `run_${b.line}.py`);
        writeFileSync(file, withPorts(b.text, serverPorts(server!)) + '\n');
        // Shared-memory regions a block creates are removed afterwards (the client library leaves them).
        const keys = [...b.text.matchAll(/create_shared_memory_region\(\s*"[^"]*",\s*"(\/[^"]+)"/g)].map(
          (m) => m[1],
        );
        try {
          const r = await run(VENV_PYTHON, [file]);
          assert.equal(
            r.code,
            0,
            `${where(b)}: the block exited with ${r.code}:\n${tail(r.stderr || r.stdout)}`,
          );
        } finally {
          for (const k of keys) {
            try {
              unlinkSync(path.join('/dev/shm', k));
            } catch {
              // not created
            }
          }
        }
      });
    }
  });
});

// ---- model files -----------------------------------------------------------------------------------------

const models = blocks.filter(
  (b) =>
    !has(b, 'fragment') && !has(b, 'no-run') && modelFileOf(b) && (isScript(b) || kindOf(b) === 'python'),
);
describe('docs code blocks: model files, loaded with their config block and sent a request', () => {
  let server: TestServer | undefined;
  let repo: string;
  before(async () => {
    if (models.length === 0) return;
    repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-doc-models-'));
    server = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--allow-metrics=false',
    ]);
  });
  after(async () => {
    await server?.stop();
    if (repo) rmSync(repo, { recursive: true, force: true });
  });
  for (const b of models) {
    const [, name, version, fileName] = modelFileOf(b)!;
    it(`${where(b)} loads as model '${name}' and answers`, async () => {
      assert.equal(tsErrors.get(b)?.length ?? 0, 0, `${where(b)}: not run, it does not type-check`);
      assert.equal(pyErrors.get(b), undefined, `${where(b)}: not run, it does not compile`);
      const configBlock = blocks.find(
        (c) =>
          c.file === b.file && kindOf(c) === 'pbtxt' && new RegExp(`^name:\\s*"${name}"`, 'm').test(c.text),
      );
      assert.ok(
        configBlock,
        `${where(b)}: model file of '${name}' but ${b.file} has no \`\`\`protobuf block with name: "${name}" ` +
          '(add one, or mark the model block no-run)',
      );
      const config = parseModelConfigText(configBlock.text, where(configBlock));
      mkdirSync(path.join(repo, name, version), { recursive: true });
      writeFileSync(path.join(repo, name, 'config.pbtxt'), configBlock.text);
      writeFileSync(path.join(repo, name, version, fileName), b.text);
      const load = await fetch(`${server!.url}/v2/repository/models/${name}/load`, { method: 'POST' });
      assert.equal(load.status, 200, `${where(b)}: model '${name}' did not load: ${await load.text()}`);
      await answersOnce(b, server!, config);
    });
  }
});

// ---- configuration, JSON, YAML ---------------------------------------------------------------------------

describe('docs code blocks: model configurations, JSON and YAML', () => {
  for (const b of blocks.filter((x) => !has(x, 'fragment'))) {
    const kind = kindOf(b);
    if (kind === 'pbtxt') {
      it(`${where(b)} \`\`\`${b.lang} parses as a model configuration`, () => {
        try {
          parseModelConfigText(b.text, b.file);
        } catch (err) {
          // The parser's own position (<file>:<line>:<col>) is within the block: make it the Markdown's.
          const m = /^[^:]+:(\d+):(\d+): ([\s\S]*)$/.exec((err as Error).message);
          assert.fail(
            m ? `${where(b, Number(m[1]))}:${m[2]}: ${m[3]}` : `${where(b)}: ${(err as Error).message}`,
          );
        }
      });
    } else if (kind === 'json') {
      it(`${where(b)} \`\`\`json parses`, () => {
        try {
          JSON.parse(b.text);
        } catch (err) {
          assert.fail(`${where(b)}: not JSON: ${(err as Error).message}`);
        }
      });
    } else if (kind === 'yaml') {
      it(`${where(b)} \`\`\`yaml parses`, () => {
        try {
          YAML.parseAllDocuments(b.text).forEach((d) => {
            if (d.errors.length > 0) throw d.errors[0];
          });
        } catch (err) {
          assert.fail(`${where(b)}: not YAML: ${(err as Error).message}`);
        }
      });
    }
  }
});
