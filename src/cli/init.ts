/**
 * `nereid init <model_name> --backend javascript|python|onnxruntime|llamacpp [--repository DIR]
 * [--decoupled] [--gguf FILE] [--force]`: scaffolds a model folder that loads and answers as written (config.pbtxt, the model, a test),
 * then prints the commands to serve it and call it. The command line of the server itself is tritonserver's
 * and has no subcommands, so `init` is recognised only as the very first argument (main.ts).
 *
 * The repository folder and the name come from the user but are still checked: a name is one folder name
 * (no separators, no `..`, not hidden, since the repository ignores hidden folders), and nothing existing is
 * overwritten without --force. With --force only the scaffold's own files are replaced (other files in the
 * folder stay), each removed first so that a symlink in their place is replaced rather than written through.
 */
import { copyFile, lstat, mkdir, open, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { scaffoldFiles, type InitBackend, type InitSpec } from './init-templates.js';
import { PACKAGE_NAME } from '../common/product.js';

export interface InitIo {
  readonly cwd: string;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

const BACKENDS: readonly InitBackend[] = ['javascript', 'python', 'onnxruntime', 'llamacpp'];
const MAX_NAME_LENGTH = 128;

export const INIT_HELP = `Usage: nereid init <model_name> --backend javascript|python|onnxruntime|llamacpp [options]

Creates <repository>/<model_name>/ with a config.pbtxt, the model and a test, ready to serve:
  javascript   1/model.ts, a typed TypeScript model (no build step; docs/javascript-models.md), and a
               tsconfig.json for editors
  python       1/model.py, a TritonPythonModel using triton_python_backend_utils (docs/python-backend.md),
               and test_<model_name>.py, a pytest test
  onnxruntime  a config and a starter 1/model.onnx (an identity model) to replace with yours
  llamacpp     a GGUF language model (docs/llm.md): a config, 1/model.json (engine settings) and, with
               --gguf, 1/model.gguf; it answers generate, generate_stream, gRPC streaming and /v1
The javascript, python and onnxruntime models take INPUT0 (FP32, any length) and answer OUTPUT0 (twice
INPUT0; the ONNX starter copies it); a llamacpp model takes text_input and answers text_output.
test_<model_name>.mjs loads the model in-process and calls it: node --test <that file>.

Options:
  --backend=<name>       javascript, python or onnxruntime (required)
  --repository=<dir>     the model repository to create the model in (default: ./model_repository of
                         the current folder, created if missing; inside Nereid's own checkout it must
                         be named)
  --decoupled            a streaming model: one response per element of INPUT0, then the final flag
                         (javascript and python; a llamacpp model always streams)
  --gguf=<file>          llamacpp: the GGUF model file to copy into 1/model.gguf
  --force                replace the scaffold's files in an existing model folder (other files stay)
  -h, --help             this text

A model name is one folder name: letters, digits, '_', '-' and '.', at most ${MAX_NAME_LENGTH} characters,
starting with a letter, a digit or '_' (the repository ignores hidden folders; '/' and '..' would leave it).`;

interface InitArgs {
  readonly name: string;
  readonly backend: InitBackend;
  readonly repository: string;
  /** Whether --repository was given (the default is ./model_repository of the current folder). */
  readonly repositoryGiven: boolean;
  readonly decoupled: boolean;
  readonly force: boolean;
  /** llamacpp: the GGUF file copied into 1/model.gguf. */
  readonly gguf: string | undefined;
}

class UsageError extends Error {}

/** Checks a model name for a scaffold (stricter than the repository, which takes any folder name). */
export function checkModelName(name: string): void {
  if (name === '') throw new UsageError('the model name is empty');
  if (name.includes('/') || name.includes('\\') || name.includes('\0') || name === '.' || name === '..') {
    throw new UsageError(`'${name}' is not a model name: it must be one folder name, without '/' or '..'`);
  }
  if (name.length > MAX_NAME_LENGTH) {
    throw new UsageError(`the model name is longer than ${MAX_NAME_LENGTH} characters`);
  }
  if (name.startsWith('.')) {
    throw new UsageError(`'${name}' starts with '.': the model repository ignores hidden folders`);
  }
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(name)) {
    throw new UsageError(
      `'${name}' is not a model name: use letters, digits, '_', '-' and '.', starting with a letter, a digit or '_' (it becomes part of URLs such as /v2/models/${encodeURIComponent(name)}/infer)`,
    );
  }
}

function parseInitArgs(argv: readonly string[]): InitArgs | 'help' {
  let name: string | undefined;
  let backend: string | undefined;
  let repository = 'model_repository';
  let repositoryGiven = false;
  let decoupled = false;
  let force = false;
  let gguf: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') return 'help';
    if (!arg.startsWith('--')) {
      if (name !== undefined) throw new UsageError(`unexpected argument '${arg}' (one model name only)`);
      name = arg;
      continue;
    }
    const eq = arg.indexOf('=');
    const flag = arg.slice(2, eq >= 0 ? eq : undefined);
    const value = (): string => {
      if (eq >= 0) return arg.slice(eq + 1);
      if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) return argv[++i];
      throw new UsageError(`--${flag} needs a value`);
    };
    const bool = (): boolean => {
      if (eq < 0) return true;
      const v = arg.slice(eq + 1).toLowerCase();
      if (v === 'true') return true;
      if (v === 'false') return false;
      throw new UsageError(`--${flag} is true or false, got '${arg.slice(eq + 1)}'`);
    };
    if (flag === 'backend') backend = value();
    else if (flag === 'repository' || flag === 'model-repository') {
      repository = value();
      repositoryGiven = true;
    } else if (flag === 'decoupled') decoupled = bool();
    else if (flag === 'force') force = bool();
    else if (flag === 'gguf') gguf = value();
    else throw new UsageError(`unknown option '--${flag}' (see nereid init --help)`);
  }
  if (name === undefined)
    throw new UsageError('a model name is required: nereid init <model_name> --backend ...');
  checkModelName(name);
  if (backend === undefined) {
    throw new UsageError(`--backend is required: one of ${BACKENDS.join(', ')}`);
  }
  if (!(BACKENDS as readonly string[]).includes(backend)) {
    throw new UsageError(`--backend must be one of ${BACKENDS.join(', ')}, got '${backend}'`);
  }
  if (decoupled && backend === 'onnxruntime') {
    throw new UsageError(
      '--decoupled is for javascript and python models: an ONNX model answers each request once',
    );
  }
  if (decoupled && backend === 'llamacpp') {
    throw new UsageError('--decoupled is for javascript and python models: a llamacpp model always streams');
  }
  if (gguf !== undefined && backend !== 'llamacpp') {
    throw new UsageError('--gguf is for llamacpp models');
  }
  if (gguf === '') throw new UsageError('--gguf is empty');
  if (repository === '') throw new UsageError('--repository is empty');
  return { name, backend: backend as InitBackend, repository, repositoryGiven, decoupled, force, gguf };
}

/**
 * The command that makes this Nereid available to a project in `cwd`, or undefined when that project already
 * has it (node_modules/nereid-server up the folder tree, as Node resolves it). A Nereid run from a git
 * checkout is installed from that checkout's path; one installed from npm by its name. Never a bare
 * `npx nereid` without it: npx would fetch the unrelated `nereid` package.
 */
function installCommand(cwd: string): string | undefined {
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'node_modules', PACKAGE_NAME, 'package.json'))) return undefined;
    if (path.dirname(dir) === dir) break;
  }
  const checkout = checkoutRoot();
  if (checkout !== undefined) return `npm install ${shellQuote(checkout)}`;
  return `npm install ${PACKAGE_NAME}`;
}

function starterOnnx(): string | undefined {
  // dist/src/cli/init.js → the package root.
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const file = path.join(root, 'examples', 'model_repository', 'identity_fp32', '1', 'model.onnx');
  return existsSync(file) ? file : undefined;
}

/** Quotes a path for the printed shell commands when it needs it. */
function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The root of the Nereid checkout this command runs from, or undefined when it is an installed package. */
function checkoutRoot(): string | undefined {
  const root = path.resolve(fileURLToPath(new URL('../../../', import.meta.url)));
  return existsSync(path.join(root, '.git')) ? root : undefined;
}

const isInside = (dir: string, root: string): boolean => {
  const rel = path.relative(root, dir);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

async function writeScaffold(args: InitArgs, io: InitIo): Promise<number> {
  const repoDir = path.resolve(io.cwd, args.repository);
  const checkout = checkoutRoot();
  if (!args.repositoryGiven && checkout !== undefined && isInside(repoDir, checkout)) {
    // The default folder would be an untracked folder in Nereid's own checkout: only if asked for by name.
    io.err(
      `error: the current folder is inside Nereid's own checkout (${checkout}); nothing was written. ` +
        'Run nereid init in your project, or name the folder with --repository=<dir>\n',
    );
    return 2;
  }
  const gguf = args.gguf === undefined ? undefined : path.resolve(io.cwd, args.gguf);
  if (gguf !== undefined) {
    const problem = await ggufFileProblem(gguf);
    if (problem !== undefined) {
      io.err(`error: --gguf '${args.gguf}' ${problem}; nothing was written\n`);
      return 1;
    }
  }
  const modelDir = path.join(repoDir, args.name);
  const existing = await lstat(modelDir).catch(() => undefined);
  if (existing) {
    if (!args.force) {
      io.err(
        `error: '${modelDir}' already exists; nothing was written (pass --force to replace the scaffold's files in it)\n`,
      );
      return 1;
    }
    if (!existing.isDirectory()) {
      io.err(
        `error: '${modelDir}' exists and is not a folder (a symlink or a file): not touched, even with --force\n`,
      );
      return 1;
    }
  }
  const spec: InitSpec = { name: args.name, backend: args.backend, decoupled: args.decoupled };
  const files = scaffoldFiles(spec);
  await mkdir(path.join(modelDir, '1'), { recursive: true });
  const write = async (rel: string, action: (target: string) => Promise<void>): Promise<void> => {
    const target = path.join(modelDir, rel);
    await mkdir(path.dirname(target), { recursive: true });
    // Removed first: a symlink left where a scaffold file goes is replaced, never written through.
    await rm(target, { force: true });
    await action(target);
  };
  for (const f of files) await write(f.path, (t) => writeFile(t, f.text, { flag: 'wx' }));
  const summary = files.map((f) => [f.path, f.role] as const);
  if (args.backend === 'onnxruntime') {
    const starter = starterOnnx();
    if (starter) {
      await write('1/model.onnx', (t) => copyFile(starter, t));
      summary.splice(1, 0, [
        '1/model.onnx',
        'a starter identity model (OUTPUT0 = INPUT0): replace it with yours',
      ]);
    }
  }

  if (args.backend === 'llamacpp') {
    if (gguf !== undefined) {
      await write('1/model.gguf', (t) => copyFile(gguf, t));
      summary.splice(1, 0, ['1/model.gguf', `the model, copied from ${args.gguf}`]);
    }
  }

  const rel = path.relative(io.cwd, repoDir) || '.';
  const repoArg = shellQuote(rel.startsWith('..') || path.isAbsolute(rel) ? repoDir : `./${rel}`);
  const testPath = shellQuote(
    path.join(rel.startsWith('..') ? repoDir : rel, args.name, `test_${args.name}.mjs`),
  );
  const width = Math.max(...summary.map(([p]) => p.length)) + 2;
  const lines = [
    `Created the ${args.decoupled ? 'decoupled ' : ''}${args.backend} model '${args.name}' in ${path.join(rel, args.name)}/:`,
    ...summary.map(([p, role]) => `  ${p.padEnd(width)}${role}`),
  ];
  if (args.backend === 'onnxruntime') {
    lines.push(
      '',
      `Your model goes in ${path.join(rel, args.name, '1', 'model.onnx')} (version 1; another version is another numbered folder).`,
      'Make the inputs and outputs of config.pbtxt match it, or delete those sections: the server reads them',
      'from the model (auto-complete). The test expects the starter identity model: change it with the model.',
    );
    if (!starterOnnx())
      lines.push('(No starter model.onnx was found in this installation: add yours before serving.)');
  }
  if (args.backend === 'llamacpp' && gguf === undefined) {
    lines.push(
      '',
      `Put your GGUF model at ${path.join(rel, args.name, '1', 'model.gguf')} (or run again with --force --gguf=<file>);`,
      'docs/llm.md names a small demo model and what its licence allows.',
    );
  }
  if (args.backend === 'python') {
    lines.push(
      '',
      'Python models need python3 with numpy (docs/python-backend.md says which interpreter is used).',
    );
  }
  const infer =
    args.backend === 'llamacpp'
      ? `curl -X POST localhost:8000/v2/models/${args.name}/generate -d '{"text_input": "The capital of France is", "sampling_parameters": "{\\"max_tokens\\": 16}"}'`
      : args.decoupled
        ? `curl -N -X POST localhost:8000/v2/models/${args.name}/generate_stream -d '{"INPUT0": [1, 2, 3, 4]}'`
        : `curl -X POST localhost:8000/v2/models/${args.name}/infer -d '{"inputs": [{"name": "INPUT0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}'`;
  lines.push('', 'Next:');
  const install = installCommand(io.cwd);
  if (install !== undefined) {
    lines.push(
      `  ${install}`,
      "      installs Nereid into this folder's project: the nereid command npx runs, and the test's import",
    );
  }
  lines.push(
    `  npx nereid --model-repository=${repoArg} --watch`,
    '      serves the repository (HTTP :8000, gRPC :8001); saving a change to the model reloads it',
    `  ${infer}`,
    '      calls it from another shell',
    `  node --test ${testPath}`,
    `      runs its test (it imports the ${PACKAGE_NAME} package)`,
  );
  if (args.backend === 'python') {
    const pyTest = shellQuote(
      path.join(rel.startsWith('..') ? repoDir : rel, args.name, `test_${args.name}.py`),
    );
    lines.push(
      `  python3 -m pytest ${pyTest}`,
      '      runs its pytest test (needs pytest and numpy): the server with the model, called over HTTP',
    );
  }
  io.out(lines.join('\n') + '\n');
  return 0;
}

/** Why `file` cannot be a llamacpp model (missing, not a file, no GGUF magic), or undefined. */
async function ggufFileProblem(file: string): Promise<string | undefined> {
  const handle = await open(file, 'r').catch(() => undefined);
  if (handle === undefined) return 'cannot be opened';
  try {
    if (!(await handle.stat()).isFile()) return 'is not a file';
    const magic = Buffer.alloc(4);
    await handle.read(magic, 0, 4, 0);
    return magic.toString('latin1') === 'GGUF'
      ? undefined
      : 'is not a GGUF file (it does not start with GGUF)';
  } finally {
    await handle.close();
  }
}

/** Runs `nereid init` with the arguments after `init`; resolves with the exit code. */
export async function runInit(argv: readonly string[], io: InitIo): Promise<number> {
  let args;
  try {
    args = parseInitArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.err(`error: ${err.message}\n`);
    return 2;
  }
  if (args === 'help') {
    io.out(INIT_HELP + '\n');
    return 0;
  }
  try {
    return await writeScaffold(args, io);
  } catch (err) {
    io.err(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
