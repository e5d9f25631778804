// The dashboard's "Options in effect" names each option by the flag that sets it: every option the page
// shows maps to a flag this server accepts (or to the one described exception), so a renamed field or a
// new option without a matching flag fails here instead of showing an internal name to the operator.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { optionFlags, visibleOptions } from './dashboard-info.js';
import { FLAGS, parseFlags } from './flags.js';

describe('dashboard option names', () => {
  const { options } = parseFlags(['--model-repository=/models']);
  const flags = optionFlags(options);
  const accepted = new Set(FLAGS.flatMap((f) => [f.name, ...(f.aliases ?? [])]).map((n) => `--${n}`));

  it('names every shown option by a flag the command line accepts', () => {
    assert.deepEqual(Object.keys(flags).sort(), Object.keys(visibleOptions(options)).sort());
    for (const [key, flag] of Object.entries(flags)) {
      if (key === 'cloudStorage') continue;
      assert.ok(accepted.has(flag), `${key} → ${flag} is a flag`);
    }
  });

  it('maps the plural and renamed fields to the flag an operator types', () => {
    assert.equal(flags.modelRepositories, '--model-repository');
    assert.equal(flags.loadModels, '--load-model');
    assert.equal(flags.responseCache, '--cache-config');
    assert.equal(flags.grpcKeepaliveTimeMs, '--grpc-keepalive-time');
    assert.equal(flags.httpPort, '--http-port');
  });
});
