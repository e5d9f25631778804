import assert from 'node:assert/strict';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { confine, isWithin, realTarget, relativizePaths } from './confine.js';

void test('isWithin compares whole path segments', () => {
  assert.equal(isWithin('/a/b', '/a/b'), true);
  assert.equal(isWithin('/a/b/c', '/a/b'), true);
  assert.equal(isWithin('/a/bc', '/a/b'), false);
  assert.equal(isWithin('/a', '/a/b'), false);
  assert.equal(isWithin('/a/b/c', '/'), true);
});

void test('realTarget follows links, dangling ones included, without needing the target to exist', async () => {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'nereid-confine-')));
  try {
    await mkdir(path.join(dir, 'm/1'), { recursive: true });
    await writeFile(path.join(dir, 'm/1/real.onnx'), 'x');
    await symlink('real.onnx', path.join(dir, 'm/1/inside.onnx'));
    await symlink('/etc/passwd', path.join(dir, 'm/1/out.onnx'));
    await symlink('/nonexistent-nereid/x', path.join(dir, 'm/1/dangling.onnx'));
    await symlink('/', path.join(dir, 'm/root'));
    await symlink('dangling.onnx', path.join(dir, 'm/1/chain.onnx'));
    assert.equal(await realTarget(path.join(dir, 'm/1/inside.onnx')), path.join(dir, 'm/1/real.onnx'));
    assert.equal(await realTarget(path.join(dir, 'm/1/out.onnx')), '/etc/passwd');
    assert.equal(await realTarget(path.join(dir, 'm/1/dangling.onnx')), '/nonexistent-nereid/x');
    assert.equal(await realTarget(path.join(dir, 'm/1/chain.onnx')), '/nonexistent-nereid/x');
    assert.equal(await realTarget(path.join(dir, 'm/root/etc/shadow')), '/etc/shadow');
    assert.equal(await realTarget(path.join(dir, 'm/1/missing/x')), path.join(dir, 'm/1/missing/x'));

    const roots = [path.join(dir, 'm')];
    assert.equal(await confine(path.join(dir, 'm/1/inside.onnx'), roots, roots), 'inside');
    assert.equal(await confine(path.join(dir, 'm/1/missing.onnx'), roots, roots), 'inside');
    assert.equal(await confine(path.join(dir, 'm/1/../../x'), roots, roots), 'escapes');
    // A link out is refused the same way whether its target exists or not.
    assert.equal(await confine(path.join(dir, 'm/1/out.onnx'), roots, roots), 'leads-outside');
    assert.equal(await confine(path.join(dir, 'm/1/dangling.onnx'), roots, roots), 'leads-outside');
    assert.equal(await confine(path.join(dir, 'm/root/etc/shadow'), roots, roots), 'leads-outside');
    assert.equal(await confine(path.join(dir, 'm/root/no/such/file'), roots, roots), 'leads-outside');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

void test('relativizePaths drops server folders from messages, longest first, whole paths only', () => {
  const paths = ['/srv/repo/m', '/srv/repo'];
  assert.equal(
    relativizePaths("model file '/srv/repo/m/1/model.onnx' not found in /srv/repo/m", paths),
    "model file '1/model.onnx' not found in .",
  );
  assert.equal(relativizePaths('see /srv/repo/other/x', paths), 'see other/x');
  // Not a prefix of a longer name, not inside another path.
  assert.equal(relativizePaths('/srv/repo/mx/y', paths), 'mx/y');
  assert.equal(relativizePaths('/tmp/srv/repo/m/x', paths), '/tmp/srv/repo/m/x');
});
