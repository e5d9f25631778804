// The `nereid` command as a person meets it: --version, --help in sections with the most used flags
// first, "did you mean" for a mistyped flag, and a config.pbtxt field typo named with its likely meaning.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { FLAGS, MOST_USED_FLAGS } from '../../src/compose/flags.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const bin = path.join(root, 'bin/nereid.js');

function nereid(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

void describe('the nereid command line', () => {
  it("--version prints the package's version and exits 0", () => {
    const version = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string })
      .version;
    const r = nereid(['--version']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `nereid ${version}\n`);
  });

  it('--help: the most used flags first, then every other flag once under a section heading', () => {
    const r = nereid(['--help']);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.split('\n');
    const headings = lines.filter((l) => /^[A-Za-z][^:]*:$/.test(l));
    assert.equal(headings[0], 'Most used:');
    assert.ok(
      headings.includes('HTTP:') && headings.includes('gRPC:') && headings.includes('Logging and tracing:'),
    );
    const flagLines = lines.filter((l) => /^ {2}--/.test(l)).map((l) => /^ {2}--([a-z0-9-]+)=/.exec(l)?.[1]);
    assert.deepEqual(flagLines.slice(0, MOST_USED_FLAGS.length), [...MOST_USED_FLAGS]);
    assert.deepEqual([...flagLines].sort(), FLAGS.map((f) => f.name).sort(), 'every flag, each once');
    const mostUsedEnd = lines.indexOf(headings[1]);
    assert.ok(lines.indexOf('  --model-repository=<string>, --model-store=<string>') < mostUsedEnd);
  });

  it('an unknown flag: exit 2 and the flag it most likely meant; an unrelated word gets no guess', () => {
    const typo = nereid(['--model-repositry=/tmp/x']);
    assert.equal(typo.status, 2);
    assert.match(typo.stderr, /unrecognized option '--model-repositry'; did you mean '--model-repository'\?/);
    const other = nereid(['--frobnicate=1']);
    assert.equal(other.status, 2);
    assert.doesNotMatch(other.stderr, /did you mean/);
    assert.match(other.stderr, /unrecognized option '--frobnicate'/);
  });

  it('a config.pbtxt field typo: the model fails to load with the field it most likely meant', () => {
    const repo = mkdtempSync(path.join(tmpdir(), 'nereid-cli-'));
    try {
      mkdirSync(path.join(repo, 'typo/1'), { recursive: true });
      writeFileSync(path.join(repo, 'typo/1/model.js'), 'export default { execute: (r) => r };\n');
      writeFileSync(
        path.join(repo, 'typo/config.pbtxt'),
        'name: "typo"\nbackend: "javascript"\nmax_batch_sise: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [1] } ]\n',
      );
      const r = nereid([`--model-repository=${repo}`, '--http-port=0', '--grpc-port=0', '--metrics-port=0']);
      assert.equal(r.status, 1, 'exit-on-error: the server does not start with a model that failed');
      assert.match(
        r.stderr,
        /config\.pbtxt:3:1: unknown field 'max_batch_sise' in message ModelConfig; did you mean 'max_batch_size'\?/,
      );
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });
});
