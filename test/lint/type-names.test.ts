// One meaning per name: an exported interface, type, class or enum name is defined in one file of src/ only.
// Where two layers carry the same thing, it is written once (common/ or the inner layer) and re-exported,
// which is not a definition; where they differ, each has a name that says which one it is (OrtWireTensor,
// JsWireTensor, ...). The only exceptions are the published packages' own vocabularies, listed below with
// the exact files, so a third definition or a stale entry fails too.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SRC = path.join(ROOT, 'src');

const CLIENT =
  'nereid-server/client is shaped like Triton\u2019s Python client and may not import the server (layers); ' +
  'the server type of that name is its own internal form, with other fields';
const SDK =
  'nereid-server/sdk is the model author\u2019s API, named like Triton\u2019s python backend (pb_utils), and a ' +
  'leaf importing only common/; the server type of that name is the backend-api/core form';

/** Deliberate duplicates: name → the files that define it (sorted) and why. */
const ALLOWED: Readonly<Record<string, { readonly files: readonly string[]; readonly why: string }>> = {
  InferInput: { files: ['src/client/infer-input.ts', 'src/core/types.ts'], why: CLIENT },
  OutputTensor: { files: ['src/client/infer-result.ts', 'src/core/types.ts'], why: CLIENT },
  ModelStatistics: { files: ['src/client/types.ts', 'src/core/types.ts'], why: CLIENT },
  RepositoryIndexEntry: { files: ['src/client/types.ts', 'src/core/types.ts'], why: CLIENT },
  LogSettings: { files: ['src/client/types.ts', 'src/common/logger.ts'], why: CLIENT },
  TraceSettingsUpdate: { files: ['src/client/types.ts', 'src/core/trace/types.ts'], why: CLIENT },
  ModelConfigJson: {
    files: ['src/client/types.ts', 'src/sdk/config.ts'],
    why: 'both published packages name the config JSON; the client passes it through untyped, the SDK types the fields models read',
  },
  InferenceRequest: { files: ['src/core/types.ts', 'src/sdk/request.ts'], why: SDK },
  InferenceResponse: { files: ['src/core/types.ts', 'src/sdk/response.ts'], why: SDK },
  Tensor: { files: ['src/common/tensor.ts', 'src/sdk/tensor.ts'], why: SDK },
  ResponseSender: { files: ['src/backend-api/backend.ts', 'src/sdk/request.ts'], why: SDK },
  ExecuteResult: { files: ['src/backend-api/backend.ts', 'src/sdk/model.ts'], why: SDK },
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.join(e.parentPath, e.name));
}

type Declaration =
  ts.InterfaceDeclaration | ts.TypeAliasDeclaration | ts.ClassDeclaration | ts.EnumDeclaration;

function isDeclaration(s: ts.Statement): s is Declaration {
  return (
    ts.isInterfaceDeclaration(s) ||
    ts.isTypeAliasDeclaration(s) ||
    ts.isClassDeclaration(s) ||
    ts.isEnumDeclaration(s)
  );
}

/**
 * The interface, type, class and enum names a module defines and exports: with `export` on the declaration,
 * or declared here and named in a local `export { ... }`. Re-exports of imported names define nothing.
 */
function exportedTypeNames(fileName: string, text: string): string[] {
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const declared = new Set<string>();
  const exported = new Set<string>();
  for (const s of file.statements) {
    if (isDeclaration(s) && s.name !== undefined) {
      declared.add(s.name.text);
      if (s.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) exported.add(s.name.text);
    }
  }
  for (const s of file.statements) {
    if (!ts.isExportDeclaration(s) || s.moduleSpecifier !== undefined || s.exportClause === undefined)
      continue;
    if (!ts.isNamedExports(s.exportClause)) continue;
    for (const e of s.exportClause.elements) {
      const local = (e.propertyName ?? e.name).getText(file);
      if (declared.has(local)) exported.add(e.name.text);
    }
  }
  return [...exported];
}

/** Every exported type name defined in more than one file of `files`, with those files (sorted). */
function duplicates(files: ReadonlyMap<string, string>): Map<string, string[]> {
  const where = new Map<string, string[]>();
  for (const [name, text] of files) {
    for (const t of exportedTypeNames(name, text)) where.set(t, [...(where.get(t) ?? []), name]);
  }
  return new Map([...where].filter(([, at]) => at.length > 1).map(([t, at]) => [t, at.sort()]));
}

void describe('exported type names', () => {
  void it('finds a name exported from two files, in any of the ways a module defines one', () => {
    const found = duplicates(
      new Map([
        ['a.ts', 'export interface Wire { a: number }\ninterface Kept { k: 1 }\nexport { Kept as Shown };'],
        ['b.ts', 'type Wire = string;\nexport type { Wire };\nexport class Shown {}\nexport enum Solo { A }'],
        ['c.ts', "export type { Wire } from './a.js';\nimport { Solo } from './b.js';\nexport { Solo };"],
        ['d.ts', 'interface Wire { private: true }'],
      ]),
    );
    assert.deepEqual(
      [...found],
      [
        ['Wire', ['a.ts', 'b.ts']],
        ['Shown', ['a.ts', 'b.ts']],
      ],
    );
  });

  void it('are defined in one file of src/ each, but for the listed public-package names', () => {
    const files = new Map(
      sourceFiles(SRC).map((f) => [
        path.relative(ROOT, f).split(path.sep).join('/'),
        readFileSync(f, 'utf8'),
      ]),
    );
    assert.ok(files.size > 100, `only ${files.size} source files under ${SRC}`);
    const found = duplicates(files);
    const unexpected = [...found].filter(
      ([name, at]) => JSON.stringify(ALLOWED[name]?.files) !== JSON.stringify(at),
    );
    assert.deepEqual(
      unexpected.map(([name, at]) => `${name}: ${at.join(', ')}`),
      [],
      'exported type names defined in more than one file: share one type or give each a name of its own',
    );
    const stale = Object.keys(ALLOWED).filter((name) => !found.has(name));
    assert.deepEqual(stale, [], 'ALLOWED entries that are no longer duplicates: remove them');
  });
});
