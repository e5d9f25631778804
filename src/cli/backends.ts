/**
 * `nereid backends list` and `nereid backends install NAME...`: the Python-based backends the server finds
 * and their venvs (compose/backend-install.ts). Takes the server's --backend-directory and
 * --backend-venv-directory so it looks where the server will, and --python for the interpreter the venv
 * is made from.
 */
import { NereidError } from '../common/errors.js';
import { backendVenvRoot, installBackend, listBackends } from '../compose/backend-install.js';

export const BACKENDS_HELP = `Usage: nereid backends list [options]
       nereid backends install <name>... [options]

Python-based backends (docs/backends.md): a model with backend "<name>" that is not built in runs
<backend-directory>/<name>/model.py, found in each --backend-directory, then in Nereid's own backends.
A backend with a requirements.txt runs in a venv of its own, made by 'install' (cached by the file's hash).

Options:
  --backend-directory=<dir>       a folder of backends (repeat for several), as the server takes it
  --backend-venv-directory=<dir>  where the venvs are (default: $NEREID_BACKEND_VENVS, else .cache/backends
                                  in a source checkout, else ~/.cache/nereid/backends)
  --python=<path>                 the interpreter the venv is made from (default: python3)
  -h, --help                      this text
`;

export interface BackendsIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
}

interface BackendsArgs {
  readonly command: string | undefined;
  readonly names: string[];
  readonly directories: string[];
  venvDirectory: string | undefined;
  python: string | undefined;
  help: boolean;
}

function parse(argv: readonly string[]): BackendsArgs {
  const args: BackendsArgs = {
    command: argv[0],
    names: [],
    directories: [],
    venvDirectory: undefined,
    python: undefined,
    help: false,
  };
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      args.help = true;
      continue;
    }
    if (!arg.startsWith('--')) {
      args.names.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const key = arg.slice(2, eq >= 0 ? eq : undefined);
    const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new Error(`option '--${key}' requires a value`);
    if (key === 'backend-directory') args.directories.push(value);
    else if (key === 'backend-venv-directory') args.venvDirectory = value;
    else if (key === 'python') args.python = value;
    else throw new Error(`unrecognized option '--${key}' (see nereid backends --help)`);
  }
  return args;
}

export async function runBackends(argv: readonly string[], io: BackendsIo): Promise<number> {
  let args;
  try {
    args = parse(argv);
  } catch (err) {
    io.err(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  if (args.help || args.command === undefined || args.command === '--help' || args.command === '-h') {
    io.out(BACKENDS_HELP);
    return args.command === undefined ? 2 : 0;
  }
  const options = {
    backendDirectories: args.directories,
    venvRoot: backendVenvRoot(args.venvDirectory, io.env),
  };
  try {
    if (args.command === 'list') {
      for (const b of await listBackends(options)) {
        const state =
          b.venv === undefined ? 'no packages needed' : b.installed ? 'installed' : 'not installed';
        io.out(`${b.name}\t${state}\t${b.dir}${b.venv && b.installed ? `\t${b.venv.dir}` : ''}\n`);
      }
      return 0;
    }
    if (args.command === 'install') {
      if (args.names.length === 0) {
        io.err('error: nereid backends install needs the name of a backend (nereid backends list)\n');
        return 2;
      }
      for (const name of args.names) {
        await installBackend(name, { ...options, python: args.python, out: io.out });
      }
      return 0;
    }
  } catch (err) {
    io.err(`error: ${err instanceof NereidError || err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  io.err(`error: unknown command 'nereid backends ${args.command}' (list, install)\n`);
  return 2;
}
