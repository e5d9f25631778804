import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { helpText, parseFlags } from './flags.js';

describe('parseFlags', () => {
  it('reads tritonserver flags in both --k=v and --k v forms, with Triton defaults', () => {
    const { options } = parseFlags([
      '--model-repository=/a',
      '--model-store',
      '/b',
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--http-port',
      '0',
      '--strict-readiness=false',
      '--disable-auto-complete-config',
      '--backend-config=onnxruntime,default-max-batch-size=16',
    ]);
    assert.deepEqual(options.modelRepositories, ['/a', '/b']);
    assert.equal(options.modelControlMode, 'explicit');
    assert.deepEqual(options.loadModels, ['simple']);
    assert.equal(options.httpPort, 0);
    assert.equal(options.grpcPort, 8001);
    assert.equal(options.strictReadiness, false);
    assert.equal(options.disableAutoCompleteConfig, true);
    assert.equal(options.backendConfig.get('onnxruntime')?.get('default-max-batch-size'), '16');
    assert.equal(options.repositoryPollSecs, 15);
    assert.ok(Object.isFrozen(options));
  });

  it('rejects unknown flags, bad values and invalid combinations with clear messages', () => {
    assert.throws(() => parseFlags(['--model-repository=/a', '--nope=1']), /unrecognized option '--nope'/);
    assert.throws(
      () => parseFlags(['--model-repository=/a', '--http-port=70000']),
      /--http-port must be between 0 and 65535/,
    );
    assert.throws(
      () => parseFlags(['--model-repository=/a', '--strict-readiness=maybe']),
      /expects a boolean/,
    );
    assert.throws(() => parseFlags([]), /--model-repository must be specified/);
    assert.throws(
      () => parseFlags(['--model-repository=/a', '--load-model=x']),
      /only be used with --model-control-mode=explicit/,
    );
    assert.throws(
      () =>
        parseFlags([
          '--model-repository=/a',
          '--model-control-mode=explicit',
          '--load-model=*',
          '--load-model=x',
        ]),
      /must be the ONLY startup model/,
    );
  });

  it('accepts compatibility-only flags and reports them as ignored', () => {
    const r = parseFlags([
      '--model-repository=/a',
      '--pinned-memory-pool-byte-size=0',
      '--http-thread-count=4',
    ]);
    assert.deepEqual(r.ignored, ['--pinned-memory-pool-byte-size', '--http-thread-count']);
    assert.match(helpText(), /--model-repository=<string>, --model-store=<string>/);
  });
});
