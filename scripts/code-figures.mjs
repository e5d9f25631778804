#!/usr/bin/env node
// Code figures of a checkout, for before/after notes: `node scripts/code-figures.mjs [checkout]` (default:
// the current directory). Over src/**/*.ts without tests (*.test.ts, *.testkit.ts): the 10 largest files
// and the 10 largest functions (any function, method, accessor, constructor or arrow, nested ones counted
// on their own), the number of functions over 80 lines, and the frontends → core imports: import and
// `export … from` declarations in src/frontends/** whose target is a file under src/core/, and how many
// distinct core files they name. Lines are newline counts (as `wc -l`); a function's lines run from its
// first token to its last. Sorted by size, then by name, so two runs print the same.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const ts = createRequire(import.meta.url)('typescript');
const TOP = Number(process.env.TOP ?? 10);
const LONG = 80;

const root = path.resolve(process.argv[2] ?? '.');
const src = path.join(root, 'src');

function sourceFiles(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (/\.ts$/.test(e.name) && !/\.(test|testkit)\.ts$/.test(e.name)) out.push(p);
  }
  return out;
}

const rel = (p) => path.relative(root, p).split(path.sep).join('/');
const byName = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const bySize = (a, b) => b.lines - a.lines || byName(a.name, b.name);

/** A function node's name: its own, its variable's or property's, with its class; else `<anonymous>`. */
function nameOf(node) {
  const own = node.name && ts.isIdentifier(node.name) ? node.name.text : node.name?.getText();
  let name = own;
  if (ts.isConstructorDeclaration(node)) name = 'constructor';
  const parent = node.parent;
  if (name === undefined && parent) {
    if (
      ts.isVariableDeclaration(parent) ||
      ts.isPropertyAssignment(parent) ||
      ts.isPropertyDeclaration(parent)
    )
      name = parent.name.getText();
  }
  const holder = ts.isPropertyDeclaration(parent ?? node) ? parent.parent : parent;
  const cls =
    holder && (ts.isClassDeclaration(holder) || ts.isClassExpression(holder)) ? holder.name?.text : undefined;
  if (name === undefined) {
    const { line } = node.getSourceFile().getLineAndCharacterOfPosition(node.getStart());
    return `<anonymous>@${line + 1}`;
  }
  return cls === undefined ? name : `${cls}.${name}`;
}

const isFunction = (n) =>
  ts.isFunctionDeclaration(n) ||
  ts.isFunctionExpression(n) ||
  ts.isArrowFunction(n) ||
  ts.isMethodDeclaration(n) ||
  ts.isConstructorDeclaration(n) ||
  ts.isGetAccessorDeclaration(n) ||
  ts.isSetAccessorDeclaration(n);

const files = [];
const functions = [];
const coreImports = [];
for (const file of sourceFiles(src).sort(byName)) {
  const text = readFileSync(file, 'utf8');
  const name = rel(file);
  files.push({ name, lines: text.split('\n').length - 1 });
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (isFunction(node) && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      functions.push({ name: `${name}:${nameOf(node)}`, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  if (!name.startsWith('src/frontends/')) continue;
  for (const st of sf.statements) {
    const spec = (ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) && st.moduleSpecifier;
    if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue;
    const target = rel(path.resolve(path.dirname(file), spec.text)).replace(/\.js$/, '.ts');
    if (target.startsWith('src/core/')) coreImports.push(target);
  }
}

files.sort(bySize);
functions.sort(bySize);
const pad = (n) => String(n).padStart(5);
console.log(
  `code figures of ${root} (src/**/*.ts without tests: ${files.length} files, ${functions.length} functions)`,
);
console.log(`\nlargest files (lines):`);
for (const f of files.slice(0, TOP)) console.log(`${pad(f.lines)}  ${f.name}`);
console.log(`\nlargest functions (lines, file:name):`);
for (const f of functions.slice(0, TOP)) console.log(`${pad(f.lines)}  ${f.name}`);
console.log(`\nfunctions over ${LONG} lines: ${functions.filter((f) => f.lines > LONG).length}`);
console.log(
  `frontends → core: ${coreImports.length} import lines, ${new Set(coreImports).size} distinct core modules`,
);
