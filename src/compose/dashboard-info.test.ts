// The dashboard's "Options in effect" names each option by the flag that sets it: every option the page
// shows maps to a flag this server accepts (or to the one described exception), so a renamed field or a
// new option without a matching flag fails here instead of showing an internal name to the operator.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LogRing } from '../common/log-ring.js';
import { Logger } from '../common/logger.js';
import { dashboardLogs, logSecrets, optionFlags, visibleOptions } from './dashboard-info.js';
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

describe('dashboard log lines', () => {
  it('masks the restricted-API header values and credential pairs, and leaves other lines as they are', () => {
    const { options } = parseFlags([
      '--model-repository=/models',
      '--http-restricted-api=model-repository:Admin-Key=hunter2-secret',
      '--grpc-restricted-protocol=inference:infer-key=grpc-secret-value',
    ]);
    const secrets = logSecrets(options);
    assert.deepEqual(secrets, ['grpc-secret-value', 'hunter2-secret']);
    const ring = new LogRing(3);
    ring.push('INFO', 'a.ts', 1, 'plain line');
    ring.push('WARNING', 'b.ts', 2, 'header Admin-Key was hunter2-secret, then grpc-secret-value');
    ring.push('ERROR', 'c.ts', 3, 'redis://host?password=pa55&db=0 token: abc api_key="k1"');
    const shown = dashboardLogs(ring.lines(), secrets);
    assert.deepEqual(
      shown.map((l) => l.message),
      [
        'plain line',
        'header Admin-Key was [redacted], then [redacted]',
        'redis://host?password=[redacted]&db=0 token: [redacted] api_key="[redacted]"',
      ],
    );
    assert.ok(!JSON.stringify(shown).includes('hunter2'));
  });
});

describe('the log ring', () => {
  it('keeps the last lines only, oldest first, numbered', () => {
    const ring = new LogRing(2);
    for (let i = 1; i <= 5; i++) ring.push('INFO', 'x.ts', i, `line ${i}`);
    assert.deepEqual(
      ring.lines().map((l) => [l.seq, l.message]),
      [
        [4, 'line 4'],
        [5, 'line 5'],
      ],
    );
    assert.deepEqual(
      ring.lines(4).map((l) => l.seq),
      [5],
    );
  });

  it('is filled by the logger with the lines its switches let through', () => {
    const log = new Logger({ logInfo: false }, () => {});
    log.info('hidden');
    log.warn('shown');
    assert.deepEqual(
      log.recent.lines().map((l) => [l.level, l.message]),
      [['WARNING', 'shown']],
    );
    assert.match(log.recent.lines()[0].file, /dashboard-info\.test\.(ts|js)/);
  });
});
