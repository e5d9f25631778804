/**
 * Module hooks of a model's worker thread (node:module register(); they apply to that worker only):
 * `nereid` and `nereid/sdk` resolve to the SDK the runtime itself uses — wherever the model lives, so
 * its classes are the runtime's — and `.ts` / `.mts` files are loaded as ES modules with their types
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

export const resolve: ResolveHook = async (specifier, context, nextResolve) => {
  if (specifier === 'nereid' || specifier === 'nereid/sdk') return { url: sdkUrl, shortCircuit: true };
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
  } finally {
    transforms--;
    await stopWhenIdle();
  }
};
