/**
 * Reads the fenced code blocks of the project's Markdown (README.md, docs/*.md, the READMEs under
 * examples/, bench/ and deploy/) and says what the docs test does with each: type-check and run,
 * type-check only, parse, or nothing (a marked fragment). The convention (docs/architecture.md, "Code
 * blocks in the docs"): the info string's first word is the language; the words after it may be `no-run`
 * (checked, not run) or `fragment` (not checked: a piece of a larger program, explained by the text around
 * it).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export interface CodeBlock {
  /** Path relative to the repository root, with forward slashes (`docs/client.md`). */
  readonly file: string;
  /** 1-based line of the block's first content line (the line after the opening fence). */
  readonly line: number;
  /** The info string's first word, lower-case ('' when the fence has none). */
  readonly lang: string;
  /** The info string's other words (`no-run`, `fragment`). */
  readonly attrs: readonly string[];
  /** The content, with the fence's indentation removed from each line. */
  readonly text: string;
}

export type BlockKind =
  'typescript' | 'javascript' | 'shell' | 'python' | 'pbtxt' | 'json' | 'yaml' | 'other';

const KINDS: Readonly<Record<string, BlockKind>> = {
  ts: 'typescript',
  typescript: 'typescript',
  mts: 'typescript',
  js: 'javascript',
  javascript: 'javascript',
  mjs: 'javascript',
  sh: 'shell',
  bash: 'shell',
  shell: 'shell',
  python: 'python',
  py: 'python',
  protobuf: 'pbtxt',
  pbtxt: 'pbtxt',
  json: 'json',
  yaml: 'yaml',
  yml: 'yaml',
};

export const ATTRIBUTES = ['no-run', 'fragment'] as const;

export function kindOf(block: CodeBlock): BlockKind {
  return KINDS[block.lang] ?? 'other';
}

/**
 * The Markdown files the test reads: README.md, every docs/*.md, and the READMEs under examples/, bench/
 * and deploy/ (sorted; test fixtures' notes are not user docs).
 */
export function markdownFiles(root: string): string[] {
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  const readmes = ['examples', 'bench', 'deploy'].flatMap((dir) =>
    (readdirSync(path.join(root, dir), { recursive: true }) as string[])
      .filter((f) => path.basename(f) === 'README.md')
      .map((f) => `${dir}/${f.split(path.sep).join('/')}`)
      .sort(),
  );
  return ['README.md', ...docs, ...readmes];
}

/**
 * The fenced blocks of one Markdown text (``` or ~~~ fences of 3+ characters, indented up to the
 * CommonMark limit or inside a list item; a closing fence is the same character, at least as long).
 * An unclosed fence runs to the end of the file, as CommonMark says.
 */
export function extractBlocks(file: string, markdown: string): CodeBlock[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})(.*)$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, info] = open;
    if (fence[0] === '`' && info.includes('`')) continue; // inline code, not a fence
    const words = info.trim().split(/\s+/).filter(Boolean);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = /^(\s*)(`{3,}|~{3,})\s*$/.exec(lines[j]);
      if (close && close[2][0] === fence[0] && close[2].length >= fence.length) break;
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j].trimStart());
    }
    blocks.push({
      file,
      line: i + 2,
      lang: (words[0] ?? '').toLowerCase(),
      attrs: words.slice(1).map((w) => w.replace(/[:,]$/, '')),
      text: body.join('\n'),
    });
    i = j;
  }
  return blocks;
}

export function readBlocks(root: string): CodeBlock[] {
  return markdownFiles(root).flatMap((f) => extractBlocks(f, readFileSync(path.join(root, f), 'utf8')));
}

/** `docs/client.md:15`: where a block starts, for test names and failure messages. */
export function where(block: CodeBlock, lineInBlock = 1): string {
  return `${block.file}:${block.line + lineInBlock - 1}`;
}

// ---- shell blocks -------------------------------------------------------------------------------------

/** One command of a shell block: its words (quotes removed) and the block line it starts on (1-based). */
export interface ShellCommand {
  readonly words: readonly string[];
  readonly lineInBlock: number;
}

/**
 * Splits a shell block into simple commands, as far as the docs need: `\` line continuations, '…' and "…"
 * quoting (across lines too), `#` comments, and `&&`, `||`, `;`, `|`, newlines between commands. A
 * here-document's body is skipped. Not a shell: no expansions, no subshells (words with `$(` stay as they
 * are), redirections stay in the words.
 */
export function shellCommands(text: string): ShellCommand[] {
  const commands: ShellCommand[] = [];
  let words: string[] = [];
  let word: string | undefined;
  let line = 1;
  let startLine = 1;
  let heredoc: string | undefined;
  const endWord = (): void => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  const endCommand = (): void => {
    endWord();
    if (words.length > 0) commands.push({ words, lineInBlock: startLine });
    words = [];
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (words.length === 0 && word === undefined && c !== ' ' && c !== '\t') startLine = line;
    if (c === '\n') {
      line++;
      endCommand();
      if (heredoc !== undefined) {
        // Skip the body up to the line that is the delimiter.
        const lines = text.slice(i + 1).split('\n');
        const n = lines.findIndex((l) => l.trim() === heredoc);
        const skip = n < 0 ? lines.length : n + 1;
        i += lines.slice(0, skip).reduce((sum, l) => sum + l.length + 1, 0);
        line += skip;
        heredoc = undefined;
      }
      continue;
    }
    if (c === '\\' && text[i + 1] === '\n') {
      endWord();
      i++;
      line++;
      continue;
    }
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      const stop = end < 0 ? text.length : end;
      const quoted = text.slice(i + 1, stop);
      word = (word ?? '') + quoted;
      line += quoted.split('\n').length - 1;
      i = stop;
      continue;
    }
    if (c === '\\') {
      word = (word ?? '') + (text[i + 1] ?? '');
      i++;
      continue;
    }
    if (c === '#' && word === undefined) {
      const eol = text.indexOf('\n', i);
      i = (eol < 0 ? text.length : eol) - 1;
      continue;
    }
    if (c === ' ' || c === '\t') {
      endWord();
      continue;
    }
    if (c === '<' && text.startsWith('<<', i)) {
      const m = /^<<-?\s*['"]?(\w+)['"]?/.exec(text.slice(i));
      if (m) {
        endWord();
        heredoc = m[1];
        i += m[0].length - 1;
        continue;
      }
    }
    if (c === '&' && text[i - 1] === '>') {
      word = (word ?? '') + c; // 2>&1
      continue;
    }
    if (c === ';' || c === '|' || c === '&') {
      endCommand();
      if (text[i + 1] === c) i++;
      continue;
    }
    word = (word ?? '') + c;
  }
  endCommand();
  return commands;
}

/**
 * The arguments of a `nereid` command line (`nereid …`, `npx nereid …`, `node bin/nereid.js …`,
 * `bin/nereid.js …`), or undefined for any other command. Square brackets around words mark a usage
 * synopsis's optional parts (README's `[--http-port=8000]`): they are dropped and the words kept.
 */
export function nereidArguments(words: readonly string[]): string[] | undefined {
  let rest = [...words];
  while (rest.length > 0 && /^[A-Z_][A-Z0-9_]*=/.test(rest[0])) rest = rest.slice(1); // VAR=value prefixes
  if (rest[0] === 'npx') rest = rest.slice(1);
  if (rest[0] === 'node') rest = rest.slice(1);
  if (rest[0] === undefined || !/^(nereid|(\.\/)?bin\/nereid\.js)$/.test(rest[0])) return undefined;
  return rest
    .slice(1)
    .map((w) => w.replace(/^\[+/, '').replace(/\]+$/, ''))
    .filter((w) => w !== '');
}
