/**
 * Module hooks of a model's worker thread (node:module register(); they apply to that worker only):
 * `nereid-server` and `nereid-server/sdk` (the package's name), and the older `nereid` and `nereid/sdk` that
 * models written before the rename import, resolve to the SDK the runtime itself uses — wherever the model
 * lives, so its classes are the runtime's — and `.ts` / `.mts` files are loaded as ES modules with their types
 * stripped by esbuild (no build step; no type checking). TypeScript's habit of importing `./x.js` for
 * `./x.ts`, and extensionless relative imports, resolve to the `.ts` file.
 *
 * esbuild's JavaScript API runs its transformer as a child process; the runtime tells these hooks when
 * the model's module graph has loaded, and from then on the child is stopped whenever no transform is
 * running, so an idle worker owns no process.
 */
import { readFile } from 'node:fs/promises';
import type { InitializeHook, LoadHook, ResolveHook } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { MessagePort } from 'node:worker_threads';

export interface HooksData {
  /** file: URL of the SDK entry (dist/src/sdk/index.js). */
  readonly sdkUrl: string;
  /** Receives 'loaded' once the model module has been imported. */
  readonly port: MessagePort;
}

let sdkUrl = '';
let loaded = false;
let transforms = 0;

type Esbuild = typeof import('esbuild');
let esbuild: Promise<Esbuild> | undefined;

async function stopWhenIdle(): Promise<void> {
  if (!loaded || transforms > 0 || !esbuild) return;
  await (await esbuild).stop();
}

export const initialize: InitializeHook<HooksData> = (data) => {
  sdkUrl = data.sdkUrl;
  data.port.on('message', () => {
    loaded = true;
    void stopWhenIdle();
  });
  data.port.unref();
};

const TS_FILE = /\.m?ts$/;
const isTs = (url: string | undefined): boolean =>
  url !== undefined && url.startsWith('file:') && TS_FILE.test(new URL(url).pathname);

function candidates(specifier: string): string[] {
  if (/\.m?js$/.test(specifier)) return [specifier.replace(/js$/, 'ts')];
  if (!/\.[a-z]+$/i.test(specifier)) return [`${specifier}.ts`, `${specifier}/index.ts`];
  return [];
}

/** What a model imports the SDK as: the package's name, and the name it had before (`nereid` on npm is not ours). */
const SDK_SPECIFIERS = new Set(['nereid-server', 'nereid-server/sdk', 'nereid', 'nereid/sdk']);

export const resolve: ResolveHook = async (specifier, context, nextResolve) => {
  if (SDK_SPECIFIERS.has(specifier)) return { url: sdkUrl, shortCircuit: true };
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    if (!isTs(context.parentURL) || !/^\.{1,2}\//.test(specifier)) throw err;
    for (const c of candidates(specifier)) {
      try {
        return await nextResolve(c, context);
      } catch {
        // try the next spelling
      }
    }
    throw err;
  }
};

/** Where esbuild could not read the TypeScript (the `buildErrors` of a BuildError). */
export interface BuildProblem {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly text: string;
}

/**
 * esbuild's failure as an Error that says it is a build error: its `buildErrors` (own properties survive
 * the hooks thread) let the worker label the load error as a build error, not as the model's own code
 * failing. esbuild columns count from 0; these count from 1, as editors and stack traces do.
 */
function buildError(file: string, err: unknown): Error {
  const raw = (err as { errors?: unknown }).errors;
  const problems: BuildProblem[] = [];
  if (Array.isArray(raw)) {
    for (const e of raw as {
      text?: unknown;
      location?: { file?: unknown; line?: unknown; column?: unknown };
    }[]) {
      const loc = e.location;
      problems.push({
        file: typeof loc?.file === 'string' ? loc.file : file,
        line: typeof loc?.line === 'number' ? loc.line : 0,
        column: typeof loc?.column === 'number' ? loc.column + 1 : 0,
        text: typeof e.text === 'string' ? e.text : 'syntax error',
      });
    }
  }
  if (problems.length === 0) return err instanceof Error ? err : new Error(String(err));
  const first = problems[0];
  const e = new Error(`${first.text} (${first.file}:${first.line}:${first.column})`);
  e.name = 'BuildError';
  return Object.assign(e, { buildErrors: problems });
}

export const load: LoadHook = async (url, context, nextLoad) => {
  if (!isTs(url)) return nextLoad(url, context);
  const file = fileURLToPath(url);
  const source = await readFile(file, 'utf8');
  transforms++;
  try {
    esbuild ??= import('esbuild');
    const { transform } = await esbuild;
    const out = await transform(source, {
      loader: 'ts',
      format: 'esm',
      target: 'node20',
      sourcefile: file,
      sourcemap: 'inline',
    });
    return { format: 'module', source: out.code, shortCircuit: true };
  } catch (err) {
    throw buildError(file, err);
  } finally {
    transforms--;
    await stopWhenIdle();
  }
};
