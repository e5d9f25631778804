// `npm run lint` fails on a broken layer and on an import cycle: in a temporary copy of the sources and the
// lint configuration, files planted across a layer arrow make eslint fail with the layer message, and two
// planted modules importing each other make dependency-cruiser fail. The commands are the lint script's own
// (read from package.json) with the repository's configuration files. Each run also holds a file or
// folder that breaks no rule, and the assertions name exactly the planted culprits, so a failure caused by
// anything else (a broken setup, an unrelated finding) fails the test instead of passing it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

interface Run {
  readonly code: number;
  readonly out: string;
}

function run(cwd: string, command: string, args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      path.join(cwd, 'node_modules', '.bin', command),
      args,
      { cwd, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, out: `${stdout}${stderr}` });
      },
    );
  });
}

/** The lint script's commands, each as [command, ...args]. */
function lintCommands(): string[][] {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  return pkg.scripts.lint.split('&&').map((c) => c.trim().split(/\s+/));
}

function plant(dir: string, file: string, text: string): void {
  mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  writeFileSync(path.join(dir, file), text);
}

/**
 * The cycles among the core's parts as dependency-cruiser sees the sources of `dir`: each folder of src/core/
 * is one part and each module directly in src/core/ is one (types.ts, server.ts, ...), so a tie between
 * a folder and a top-level module (which a folder-scoped rule does not see) counts too. Tests are left out:
 * a test may drive its folder from above. Each cycle is its parts, sorted, joined by ' <-> '.
 */
async function coreCycles(dir: string, depcruise: readonly string[]): Promise<string[]> {
  const config = depcruise[depcruise.indexOf('--config') + 1] ?? '.dependency-cruiser.json';
  const res = await run(dir, 'depcruise', ['src/core', '--config', config, '--output-type', 'json']);
  const graph = JSON.parse(res.out.slice(res.out.indexOf('{'))) as {
    modules: { source: string; dependencies: { resolved: string }[] }[];
  };
  const part = (file: string): string | undefined => {
    const m = /^src\/core\/([^/]+)(\/)?/.exec(file);
    return m ? `${m[1]}${m[2] ?? ''}` : undefined;
  };
  const edges = new Map<string, Set<string>>();
  for (const mod of graph.modules) {
    const from = part(mod.source);
    if (from === undefined || mod.source.endsWith('.test.ts')) continue;
    for (const dep of mod.dependencies) {
      const to = part(dep.resolved);
      if (to === undefined || to === from) continue;
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
    }
  }
  // Tarjan's strongly connected components; one of more than one part is a cycle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) cycles.push(component.sort().join(' <-> '));
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return cycles.sort();
}

void describe('npm run lint enforces the structure', () => {
  let copy = '';
  const commands = lintCommands();
  const eslint = commands.find((c) => c[0] === 'eslint');
  const depcruise = commands.find((c) => c[0] === 'depcruise');

  before(() => {
    copy = mkdtempSync(path.join(os.tmpdir(), 'nereid-lint-'));
    for (const f of ['package.json', 'tsconfig.json', 'eslint.config.js', '.dependency-cruiser.json']) {
      cpSync(path.join(ROOT, f), path.join(copy, f));
    }
    cpSync(path.join(ROOT, 'src'), path.join(copy, 'src'), { recursive: true });
    // The lint script also cruises test/ and bench/; the copy holds only src/, so they are empty here.
    mkdirSync(path.join(copy, 'test'));
    mkdirSync(path.join(copy, 'bench'));
    symlinkSync(realpathSync(path.join(ROOT, 'node_modules')), path.join(copy, 'node_modules'), 'dir');
  });
  after(() => rmSync(copy, { recursive: true, force: true }));

  void it('runs eslint and dependency-cruiser', () => {
    assert.ok(eslint, `no eslint in the lint script: ${JSON.stringify(commands)}`);
    assert.ok(depcruise, `no depcruise in the lint script: ${JSON.stringify(commands)}`);
  });

  void it('fails on imports that cross a layer arrow, and only on those', async () => {
    assert.ok(eslint);
    const planted = {
      // The model authors' SDK is a leaf: it may not reach the backend contract.
      'src/sdk/zz-planted.ts':
        "import type { ModelHandle } from '../backend-api/backend.js';\nexport type X = ModelHandle;\n",
      // The client may not reach into the server.
      'src/client/zz-planted.ts': "export { parseJsonExact } from '../frontends/http/json.js';\n",
      // common/ is the bottom layer.
      'src/common/zz-planted.ts':
        "import type { ModelStatistics } from '../core/types.js';\nexport type X = ModelStatistics;\n",
      // A frontend's transport may not reach up to its translators.
      'src/frontends/grpc/transport/zz-planted.ts': "export { modelInfer } from '../infer.js';\n",
      // Nor, being part of a frontend, past the frontends' own layer arrows.
      'src/frontends/http/transport/zz-planted.ts':
        "export { packageVersion } from '../../../compose/compose.js';\n",
    };
    // Along an arrow: core may import the backend contract; a translator its transport, a transport the
    // frontends' shared helpers and common/.
    const allowedFiles = {
      'src/core/zz-allowed.ts':
        "import type { ModelHandle } from '../backend-api/backend.js';\nexport type X = ModelHandle;\n",
      'src/frontends/grpc/zz-allowed.ts': "export { frame } from './transport/framing.js';\n",
      'src/frontends/grpc/transport/zz-allowed.ts':
        "export { drainOrClose } from '../../drain.js';\nexport { internal } from '../../../common/errors.js';\n",
    };
    for (const [file, text] of Object.entries({ ...planted, ...allowedFiles })) plant(copy, file, text);

    // The lint script's eslint, on the planted files only (the whole tree would take minutes).
    const files = [...Object.keys(planted), ...Object.keys(allowedFiles)];
    const res = await run(copy, 'eslint', [...eslint.slice(1).filter((a) => a !== '.'), ...files]);
    assert.notEqual(res.code, 0, res.out);
    for (const [file, layer] of [
      ['src/sdk/zz-planted.ts', 'backend-api'],
      ['src/client/zz-planted.ts', 'frontends'],
      ['src/common/zz-planted.ts', 'core'],
      ['src/frontends/http/transport/zz-planted.ts', 'compose'],
    ]) {
      const report = res.out.split(path.join(copy, file))[1]?.split(/\n\n/)[0] ?? '';
      assert.match(report, new RegExp(`must not import from src/${layer}/`), `${file}:\n${res.out}`);
    }
    const transport = res.out.split(path.join(copy, 'src/frontends/grpc/transport/zz-planted.ts'))[1] ?? '';
    assert.match(transport.split(/\n\n/)[0], /transport\/ must not import the translators/, res.out);
    for (const file of Object.keys(allowedFiles)) {
      assert.ok(!res.out.includes(path.join(copy, file)), `an allowed import was reported:\n${res.out}`);
    }
    assert.match(res.out, /5 problems \(5 errors/, res.out);
  });

  void it('fails on a deep import into the core, and only on those', async () => {
    assert.ok(eslint);
    const planted = {
      // A frontend takes the core's types from its face, not from types.ts.
      'src/frontends/zz-deep.ts':
        "import type { InferenceRequest } from '../core/types.js';\nexport type X = InferenceRequest;\n",
      // The composition root's face is not the frontends'.
      'src/embedded/zz-deep.ts':
        "import { StatsRegistry } from '../core/assembly.js';\nexport const X = StatsRegistry;\n",
      // The composition root wires the core's parts through assembly.ts, not their files.
      'src/compose/zz-deep.ts':
        "import { InferenceServer } from '../core/server.js';\nexport const X = InferenceServer;\n",
    };
    const allowed = {
      'src/frontends/zz-face.ts':
        "import type { InferenceRequest } from '../core/index.js';\nexport type X = InferenceRequest;\n",
      'src/compose/zz-face.ts':
        "import { InferenceServer } from '../core/assembly.js';\nexport const X = InferenceServer;\n",
      // A frontend's test may build real statistics.
      'src/frontends/zz-face.test.ts':
        "import { StatsRegistry } from '../core/assembly.js';\nexport const X = StatsRegistry;\n",
    };
    for (const [file, text] of [...Object.entries(planted), ...Object.entries(allowed)])
      plant(copy, file, text);

    const files = [...Object.keys(planted), ...Object.keys(allowed)];
    const res = await run(copy, 'eslint', [...eslint.slice(1).filter((a) => a !== '.'), ...files]);
    assert.notEqual(res.code, 0, res.out);
    for (const [file, face] of [
      ['src/frontends/zz-deep.ts', 'src/core/index.ts'],
      ['src/embedded/zz-deep.ts', 'src/core/index.ts'],
      ['src/compose/zz-deep.ts', 'src/core/index.ts, src/core/assembly.ts'],
    ]) {
      const report = res.out.split(path.join(copy, file))[1]?.split(/\n\n/)[0] ?? '';
      assert.match(
        report,
        new RegExp(`must import the core through its face \\(${face}\\)`),
        `${file}:\n${res.out}`,
      );
    }
    for (const file of Object.keys(allowed)) {
      assert.ok(!res.out.includes(path.join(copy, file)), `an allowed import was reported:\n${res.out}`);
    }
    assert.match(res.out, /3 problems \(3 errors/, res.out);
  });

  void it('fails on an import cycle, naming it', async () => {
    assert.ok(depcruise);
    plant(
      copy,
      'src/common/zz-cycle-a.ts',
      "import { b } from './zz-cycle-b.js';\nexport const a = (): number => b;\n",
    );
    plant(
      copy,
      'src/common/zz-cycle-b.ts',
      "import { a } from './zz-cycle-a.js';\nexport const b = 1;\nexport const c = a;\n",
    );
    const res = await run(copy, 'depcruise', depcruise.slice(1));
    assert.notEqual(res.code, 0, res.out);
    assert.match(res.out, /no-circular: src\/common\/zz-cycle-[ab]\.ts/, res.out);
    // The planted cycle is the only finding: the rest of the tree has none.
    assert.match(res.out, /x 1 dependency violations \(1 errors/, res.out);
  });

  void it("fails on a cycle between the core's folders, naming it", async () => {
    assert.ok(depcruise);
    // stats/ imports trace/ (a request's record carries its trace): trace/ importing stats/ closes a cycle.
    const file = 'src/core/trace/zz-folder-cycle.ts';
    plant(
      copy,
      file,
      "import type { RequestRecord } from '../stats/request-record.js';\nexport type X = RequestRecord;\n",
    );
    try {
      const res = await run(copy, 'depcruise', depcruise.slice(1));
      assert.notEqual(res.code, 0, res.out);
      const found = [...res.out.matchAll(/no-circular-core-folders: (\S+) →\s+(\S+) →\s+(\S+)\n/g)].map((m) =>
        m.slice(1).join(' '),
      );
      assert.deepEqual(
        found.sort(),
        ['src/core/stats src/core/trace src/core/stats', 'src/core/trace src/core/stats src/core/trace'],
        res.out,
      );
    } finally {
      rmSync(path.join(copy, file));
    }
  });

  void it("has no cycle among the core's folders and top-level modules, and sees one planted", async () => {
    assert.ok(depcruise);
    assert.deepEqual(await coreCycles(ROOT, depcruise), []);
    // types.ts imports trace/types.ts (a request carries its trace): trace/ importing types.ts ties them.
    const file = 'src/core/trace/zz-module-tie.ts';
    plant(
      copy,
      file,
      "import type { InferenceRequest } from '../types.js';\nexport type X = InferenceRequest;\n",
    );
    try {
      assert.deepEqual(await coreCycles(copy, depcruise), ['trace/ <-> types.ts']);
    } finally {
      rmSync(path.join(copy, file));
    }
  });
});
