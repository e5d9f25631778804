import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { NereidError } from '../../common/errors.js';
import { ModelFolder } from './model-paths.js';

const repo = mkdtempSync(path.join(os.tmpdir(), 'nereid-paths-'));
after(() => rmSync(repo, { recursive: true, force: true }));

void test('a FIFO named as a model file, label or warmup file is refused before anything opens it', async () => {
  const modelDir = path.join(repo, 'm');
  mkdirSync(path.join(modelDir, '1', 'model.onnx.d'), { recursive: true });
  execFileSync('mkfifo', [path.join(modelDir, '1', 'model.onnx')]);
  writeFileSync(path.join(modelDir, 'labels.txt'), 'a\n');
  const folder = await ModelFolder.of({ modelName: 'm', modelDir, repositoryPath: repo });
  for (const mustExist of [true, false]) {
    await assert.rejects(
      folder.resolveValue(path.join(modelDir, '1'), 'model.onnx', "model file 'model.onnx'", { mustExist }),
      (err: unknown) =>
        err instanceof NereidError &&
        err.code === 'INVALID_ARG' &&
        err.message ===
          "model file 'model.onnx' of model 'm': '1/model.onnx' is not a regular file or folder",
    );
  }
  // Files and folders pass, and so does a missing file when it need not exist.
  const label = await folder.resolveValue(modelDir, 'labels.txt', 'label', { mustExist: true });
  assert.equal(label, path.join(modelDir, 'labels.txt'));
  await folder.resolveValue(path.join(modelDir, '1'), 'model.onnx.d', 'model file', { mustExist: true });
  await folder.resolveValue(modelDir, 'nope.txt', 'label');
});
