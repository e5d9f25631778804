// --http-restricted-api / --grpc-restricted-protocol and the header-forward patterns as the command line
// reads them: every form Triton 2.51 accepts and refuses, with Triton's texts (checked against tritonserver
// itself; the differential suite starts both servers with such flags).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseFlags } from './flags.js';
import { parseRestrictedOption, restrictionWarnings, type RestrictionDraft } from './restricted-flags.js';

const parse = (...flags: string[]) => parseFlags(['--model-repository=/m', ...flags]);

function http(arg: string, into: RestrictionDraft = {}): RestrictionDraft {
  parseRestrictedOption(arg, 'http-restricted-api', into);
  return into;
}

describe('parseRestrictedOption', () => {
  it('reads one category, several, and keys and values holding ":" and "="', () => {
    assert.deepEqual(http('health:a=b'), { health: { header: 'a', value: 'b' } });
    assert.deepEqual(http('model-repository,shared-memory:Admin-Key=S3cret'), {
      'model-repository': { header: 'Admin-Key', value: 'S3cret' },
      'shared-memory': { header: 'Admin-Key', value: 'S3cret' },
    });
    // The first ':' ends the categories, the first '=' after it ends the key.
    assert.deepEqual(http('trace:a:b=c=d:e'), { trace: { header: 'a:b', value: 'c=d:e' } });
  });

  it('accepts every one of Triton’s nine categories', () => {
    const all =
      'health,metadata,inference,shared-memory,model-config,model-repository,statistics,trace,logging';
    assert.equal(Object.keys(http(`${all}:k=v`)).length, 9);
  });

  it('accepts Nereid’s dashboard category on HTTP only (gRPC has no dashboard)', () => {
    assert.deepEqual(http('dashboard,statistics:D=v'), {
      dashboard: { header: 'D', value: 'v' },
      statistics: { header: 'D', value: 'v' },
    });
    assert.throws(() => parseRestrictedOption('dashboard:a=b', 'grpc-restricted-protocol', {}), {
      message: "unknown restricted protocol 'dashboard'",
    });
  });

  it('puts triton-grpc-protocol- before a gRPC key', () => {
    const into: RestrictionDraft = {};
    parseRestrictedOption('inference:infer-key=v', 'grpc-restricted-protocol', into);
    assert.deepEqual(into, { inference: { header: 'triton-grpc-protocol-infer-key', value: 'v' } });
  });

  it('refuses a malformed value with Triton’s format message', () => {
    for (const arg of [
      '',
      'health',
      'health:a',
      ':a=b',
      'health:=b',
      'health:a=',
      'health=a:b', // '=' before the ':' is part of the category list, then no '=' follows the ':'
      'health=a',
    ]) {
      assert.throws(
        () => http(arg),
        {
          message: `--http-restricted-api option format is '<config name>:<setting>=<value>'. Got ${arg}`,
        },
        arg,
      );
    }
    assert.throws(() => parseRestrictedOption('health', 'grpc-restricted-protocol', {}), {
      message: "--grpc-restricted-protocol option format is '<config name>:<setting>=<value>'. Got health",
    });
  });

  it("takes Nereid's HTTP-only category openai (the /v1 API) on HTTP and refuses it on gRPC", () => {
    assert.deepEqual(http('openai,inference:k=v'), {
      openai: { header: 'k', value: 'v' },
      inference: { header: 'k', value: 'v' },
    });
    assert.throws(() => parseRestrictedOption('openai:a=b', 'grpc-restricted-protocol', {}), {
      message: "unknown restricted protocol 'openai'",
    });
  });

  it('refuses an unknown category, as Triton names it (api for HTTP, protocol for gRPC)', () => {
    assert.throws(() => http('foo:a=b'), { message: "unknown restricted api 'foo'" });
    assert.throws(() => http('Health:a=b'), { message: "unknown restricted api 'Health'" });
    assert.throws(() => http('health, metadata:a=b'), { message: "unknown restricted api ' metadata'" });
    assert.throws(() => http('health,,metadata:a=b'), { message: "unknown restricted api ''" });
    assert.throws(() => http('health=x:a=b'), { message: "unknown restricted api 'health=x'" });
    assert.throws(() => parseRestrictedOption('shm:a=b', 'grpc-restricted-protocol', {}), {
      message: "unknown restricted protocol 'shm'",
    });
  });

  it('refuses a category restricted twice, in one group or two, even with the same key and value', () => {
    const twice = { message: "restricted api 'health' can not be specified in multiple config groups" };
    assert.throws(() => http('health,health:a=b'), twice);
    assert.throws(() => http('health:a=b', http('health:a=b')), twice);
    assert.throws(() => http('health:c=d', http('metadata,health:a=b')), twice);
    assert.throws(
      () => parseRestrictedOption('logging:a=b', 'grpc-restricted-protocol', { logging: {} as never }),
      {
        message: "restricted protocol 'logging' can not be specified in multiple config groups",
      },
    );
  });
});

describe('restriction and forwarding flags on the command line', () => {
  it('default to every API open and nothing forwarded', () => {
    const { options, warnings } = parse();
    assert.deepEqual(options.httpRestrictedApis, {});
    assert.deepEqual(options.grpcRestrictedProtocols, {});
    assert.equal(options.httpHeaderForwardPattern, undefined);
    assert.equal(options.grpcHeaderForwardPattern, undefined);
    assert.deepEqual(warnings, []);
  });

  it('collect repeated groups into frozen options, per protocol', () => {
    const { options, ignored, warnings } = parse(
      '--http-restricted-api=model-repository,shared-memory:admin=a1',
      '--http-restricted-api',
      'inference:user=u1',
      '--grpc-restricted-protocol=model-repository:admin=a2',
    );
    assert.deepEqual(options.httpRestrictedApis, {
      'model-repository': { header: 'admin', value: 'a1' },
      'shared-memory': { header: 'admin', value: 'a1' },
      inference: { header: 'user', value: 'u1' },
    });
    assert.deepEqual(options.grpcRestrictedProtocols, {
      'model-repository': { header: 'triton-grpc-protocol-admin', value: 'a2' },
    });
    assert.ok(Object.isFrozen(options.httpRestrictedApis));
    assert.ok(Object.isFrozen(options.httpRestrictedApis.inference));
    assert.deepEqual(ignored, []); // applied, not inert
    assert.deepEqual(warnings, []);
  });

  it('keeps HTTP and gRPC apart: the same category may be restricted once on each', () => {
    const { options } = parse('--http-restricted-api=health:a=b', '--grpc-restricted-protocol=health:a=b');
    assert.equal(options.httpRestrictedApis.health?.header, 'a');
    assert.equal(options.grpcRestrictedProtocols.health?.header, 'triton-grpc-protocol-a');
  });

  it('refuse the command line with Triton’s text when a value is wrong', () => {
    assert.throws(() => parse('--http-restricted-api=health:a=b', '--http-restricted-api=health:c=d'), {
      message: "restricted api 'health' can not be specified in multiple config groups",
    });
    assert.throws(() => parse('--grpc-restricted-protocol=nope:a=b'), {
      message: "unknown restricted protocol 'nope'",
    });
  });

  it('take forward patterns as given, including an empty one, and refuse one RE2 cannot compile', () => {
    const { options, warnings } = parse(
      '--http-header-forward-pattern=(?-i)PREFIX_.*',
      '--grpc-header-forward-pattern=',
    );
    assert.equal(options.httpHeaderForwardPattern, '(?-i)PREFIX_.*');
    assert.equal(options.grpcHeaderForwardPattern, '');
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /^--grpc-header-forward-pattern is empty: .*every request header is forwarded/);
    assert.throws(() => parse('--http-header-forward-pattern=x-(a'), {
      message:
        "--http-header-forward-pattern: 'x-(a' is not a valid RE2 regular expression: error parsing regexp: missing closing ): `(?i)x-(a`",
    });
    // Perl's look-ahead is not RE2 (Triton's RE2 refuses it too).
    assert.throws(() => parse('--grpc-header-forward-pattern=a(?=b)'), /not a valid RE2 regular expression/);
  });

  it('warn once per gRPC key with capitals, which no client can send', () => {
    const warnings = restrictionWarnings(
      {
        health: { header: 'triton-grpc-protocol-Admin', value: 'x' },
        trace: { header: 'triton-grpc-protocol-Admin', value: 'x' },
        inference: { header: 'triton-grpc-protocol-user', value: 'y' },
      },
      undefined,
      undefined,
    );
    assert.deepEqual(warnings, [
      "--grpc-restricted-protocol: gRPC metadata keys are lower-case on the wire, so no client can send 'triton-grpc-protocol-Admin' and health, trace are closed to every gRPC call (as in Triton); use a lower-case key",
    ]);
    // HTTP header names are case-insensitive: no warning.
    assert.deepEqual(parse('--http-restricted-api=health:Admin-Key=x').warnings, []);
  });
});
