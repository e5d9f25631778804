import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { FLAGS, closestFlag, editDistance, helpText, parseFlags } from './flags.js';

interface TritonFlag {
  readonly flag: string;
  readonly tritonValue: string;
  readonly example: string;
  readonly needs: string;
}

/** test/fixtures/tritonserver-flags.tsv: every option of tritonserver's parser. */
function tritonFlags(): TritonFlag[] {
  const text = readFileSync(
    new URL('../../../test/fixtures/tritonserver-flags.tsv', import.meta.url),
    'utf8',
  );
  const rows = text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
  return rows.slice(1).map((l) => {
    const [flag, tritonValue, example, needs] = l.split('\t');
    return { flag, tritonValue, example, needs };
  });
}

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

  it("takes --id with Triton's default, and --strict-gpu-kind (Nereid only, default off)", () => {
    const defaults = parseFlags(['--model-repository=/a']).options;
    assert.equal(defaults.id, 'triton');
    assert.equal(defaults.strictGpuKind, false);
    const set = parseFlags(['--model-repository=/a', '--id', 'edge-7', '--strict-gpu-kind']).options;
    assert.equal(set.id, 'edge-7');
    assert.equal(set.strictGpuKind, true);
    assert.throws(
      () => parseFlags(['--model-repository=/a', '--strict-gpu-kind=sometimes']),
      /--strict-gpu-kind expects a boolean/,
    );
  });

  it('takes --strict-model-outputs (Nereid only, default off: warnings instead of failed requests)', () => {
    assert.equal(parseFlags(['--model-repository=/a']).options.strictModelOutputs, false);
    const set = parseFlags(['--model-repository=/a', '--strict-model-outputs=true']).options;
    assert.equal(set.strictModelOutputs, true);
    assert.throws(
      () => parseFlags(['--model-repository=/a', '--strict-model-outputs=maybe']),
      /--strict-model-outputs expects a boolean/,
    );
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
      '--grpc-infer-allocation-pool-size=4',
      '--grpc-infer-allocation-pool-size=8',
    ]);
    assert.deepEqual(r.ignored, ['--pinned-memory-pool-byte-size', '--grpc-infer-allocation-pool-size']);
    assert.equal(r.warnings.length, 2, 'one warning per flag, however often it is given');
    assert.match(r.warnings[0], /--pinned-memory-pool-byte-size .*no GPU support/);
    assert.match(r.warnings[1], /--grpc-infer-allocation-pool-size .*no per-rpc state/);
    assert.match(helpText(), /--model-repository=<string>, --model-store=<string>/);
  });

  it("accepts every option of tritonserver's parser, in both --k=v and --k v forms", () => {
    const rows = tritonFlags();
    assert.ok(rows.length >= 90, `the fixture lists ${rows.length} flags`);
    for (const row of rows) {
      const base = ['--model-repository=/r', ...(row.needs === '-' ? [] : row.needs.split(' '))];
      const forms =
        row.example === '-'
          ? [[`--${row.flag}`]]
          : [[`--${row.flag}=${row.example}`], [`--${row.flag}`, row.example]];
      for (const form of forms) {
        assert.doesNotThrow(() => parseFlags([...base, ...form]), `${form.join(' ')} is refused`);
      }
    }
  });

  it('checks the values of flags that change nothing, as Triton does', () => {
    assert.throws(
      () => parseFlags(['--model-repository=/r', '--grpc-max-response-pool-size=two']),
      /integer/,
    );
    assert.throws(() => parseFlags(['--model-repository=/r', '--allow-sagemaker=maybe']), /boolean/);
    assert.throws(
      () => parseFlags(['--model-repository=/r', '--min-supported-compute-capability=six']),
      /expects a number/,
    );
  });

  it("reads Triton's gRPC transport flags and Nereid's gRPC limits, with Triton's defaults", () => {
    const defaults = parseFlags(['--model-repository=/r']).options;
    assert.equal(defaults.grpcKeepaliveTimeMs, 7_200_000);
    assert.equal(defaults.grpcKeepaliveTimeoutMs, 20_000);
    assert.equal(defaults.grpcKeepalivePermitWithoutCalls, false);
    assert.equal(defaults.grpcHttp2MaxPingsWithoutData, 2);
    assert.equal(defaults.grpcHttp2MinRecvPingIntervalWithoutDataMs, 300_000);
    assert.equal(defaults.grpcHttp2MaxPingStrikes, 2);
    assert.equal(defaults.grpcMaxConnectionAgeMs, 0);
    assert.equal(defaults.grpcMaxConnectionAgeGraceMs, 0);
    assert.equal(defaults.grpcInferResponseCompressionLevel, 'none');
    const { options, warnings } = parseFlags([
      '--model-repository=/r',
      '--grpc-keepalive-time=1000',
      '--grpc-keepalive-timeout=500',
      '--grpc-keepalive-permit-without-calls=true',
      '--grpc-http2-max-pings-without-data=0',
      '--grpc-http2-min-recv-ping-interval-without-data=10000',
      '--grpc-http2-max-ping-strikes=5',
      '--grpc-max-connection-age=60000',
      '--grpc-max-connection-age-grace=5000',
      '--grpc-infer-response-compression-level=MEDIUM',
      '--grpc-max-connection-idle=0',
      '--grpc-max-concurrent-streams=64',
      '--grpc-max-decompressed-size=1024',
      '--grpc-max-connection-buffered-bytes=2048',
      '--grpc-max-buffered-bytes=4096',
      '--grpc-infer-stream-idle-timeout=30000',
    ]);
    assert.deepEqual(warnings, []);
    assert.equal(options.grpcKeepaliveTimeMs, 1000);
    assert.equal(options.grpcKeepaliveTimeoutMs, 500);
    assert.equal(options.grpcKeepalivePermitWithoutCalls, true);
    assert.equal(options.grpcHttp2MaxPingsWithoutData, 0);
    assert.equal(options.grpcHttp2MinRecvPingIntervalWithoutDataMs, 10_000);
    assert.equal(options.grpcHttp2MaxPingStrikes, 5);
    assert.equal(options.grpcMaxConnectionAgeMs, 60_000);
    assert.equal(options.grpcMaxConnectionAgeGraceMs, 5000);
    assert.equal(options.grpcInferResponseCompressionLevel, 'medium');
    assert.equal(options.grpcMaxConnectionIdleMs, 0);
    assert.equal(options.grpcMaxConcurrentStreams, 64);
    assert.equal(options.grpcMaxDecompressedSize, 1024);
    assert.equal(options.grpcMaxConnectionBufferedBytes, 2048);
    assert.equal(options.grpcMaxBufferedBytes, 4096);
    assert.equal(options.grpcInferStreamIdleTimeoutMs, 30_000);
    const refused = (flag: string, re: RegExp): void =>
      assert.throws(() => parseFlags(['--model-repository=/r', flag]), re, flag);
    refused('--grpc-infer-response-compression-level=max', /--grpc_infer_response_compression_level/);
    refused('--grpc-keepalive-time=-1', /between 0 and/);
    refused('--grpc-max-concurrent-streams=0', /between 1 and/);
    // Triton's own range checks on flags that change nothing here.
    refused('--grpc-max-response-pool-size=0', /between 1 and/);
    const inert = parseFlags([
      '--model-repository=/r',
      '--grpc-infer-allocation-pool-size=16',
      '--grpc-max-response-pool-size=100',
    ]);
    assert.equal(inert.warnings.length, 2);
  });

  it('reads --grpc-infer-thread-count as the gRPC protocol threads: off unless given, 1 to 128', () => {
    const threads = (...flags: string[]) => parseFlags(['--model-repository=/r', ...flags]).options;
    assert.equal(threads().grpcInferThreadCount, 0);
    assert.equal(threads('--grpc-infer-thread-count=1').grpcInferThreadCount, 1);
    assert.equal(threads('--grpc-infer-thread-count=128').grpcInferThreadCount, 128);
    assert.deepEqual(parseFlags(['--model-repository=/r', '--grpc-infer-thread-count=4']).ignored, []);
    for (const bad of ['0', '129', 'two']) {
      assert.throws(() => threads(`--grpc-infer-thread-count=${bad}`), /grpc-infer-thread-count/, bad);
    }
  });

  it('reads --log-verbose as an integer or true/false, as Model Analyzer passes it', () => {
    const level = (v: string) =>
      parseFlags(['--model-repository=/r', `--log-verbose=${v}`]).options.logVerbose;
    assert.equal(level('True'), 1);
    assert.equal(level('false'), 0);
    assert.equal(level('3'), 3);
    assert.throws(() => level('loud'), /expects an integer/);
  });

  it('reads the TLS flags as Triton does, and refuses TLS without its certificate and key', () => {
    const r = (...args: string[]) => parseFlags(['--model-repository=/r', ...args]);
    const files = ['--grpc-server-cert=/c/s.crt', '--grpc-server-key=/c/s.key'];
    const on = r('--grpc-use-ssl', ...files).options;
    assert.equal(on.grpcUseSsl, true);
    assert.equal(on.grpcUseSslMutual, false);
    assert.equal(on.grpcServerCert, '/c/s.crt');
    assert.equal(on.grpcServerKey, '/c/s.key');
    assert.equal(on.httpUseSsl, false, 'the HTTP port stays clear text');
    assert.equal(on.tlsCertPollMs, 2000);

    const mutual = r('--grpc-use-ssl-mutual=true', ...files, '--grpc-root-cert=/c/ca.crt').options;
    assert.deepEqual(
      [mutual.grpcUseSsl, mutual.grpcUseSslMutual, mutual.grpcRootCert],
      [true, true, '/c/ca.crt'],
    );
    // Triton's parser sets use_ssl for --grpc-use-ssl-mutual whatever its value; a later --grpc-use-ssl wins.
    const quirk = r('--grpc-use-ssl-mutual=false', ...files);
    assert.deepEqual([quirk.options.grpcUseSsl, quirk.options.grpcUseSslMutual], [true, false]);
    assert.match(quirk.warnings.join('\n'), /--grpc-use-ssl-mutual=false turns TLS on all the same/);
    const off = r('--grpc-use-ssl-mutual=true', '--grpc-use-ssl=false').options;
    assert.equal(off.grpcUseSsl, false);

    assert.throws(
      () => r('--grpc-use-ssl'),
      /^NereidError: --grpc-use-ssl needs --grpc-server-cert and --grpc-server-key/,
    );
    assert.throws(
      () => r('--grpc-use-ssl', '--grpc-server-cert=/c/s.crt'),
      /--grpc-use-ssl needs --grpc-server-key:/,
    );
    assert.throws(
      () => r('--grpc-use-ssl-mutual', ...files),
      /--grpc-use-ssl-mutual needs --grpc-root-cert: the PEM file of the CA certificate\(s\) that sign client certificates/,
    );
    assert.doesNotThrow(() => r('--allow-grpc=false', '--grpc-use-ssl'), 'no gRPC, no certificate needed');

    assert.match(
      r(...files).warnings.join('\n'),
      /--grpc-server-cert, --grpc-server-key given without --grpc-use-ssl: gRPC is served in clear text/,
    );
    assert.match(
      r('--grpc-use-ssl', ...files, '--grpc-root-cert=/c/ca.crt').warnings.join('\n'),
      /--grpc-root-cert is used with --grpc-use-ssl-mutual only/,
    );
    assert.deepEqual(r('--grpc-use-ssl', ...files).warnings, []);
  });

  it('reads the HTTPS flags (Nereid only) like the gRPC ones', () => {
    const r = (...args: string[]) => parseFlags(['--model-repository=/r', ...args]).options;
    const o = r(
      '--http-use-ssl-mutual',
      '--http-server-cert=/c/h.crt',
      '--http-server-key=/c/h.key',
      '--http-root-cert=/c/ca.crt',
      '--tls-cert-poll-ms=0',
    );
    assert.deepEqual(
      [o.httpUseSsl, o.httpUseSslMutual, o.httpServerCert, o.httpServerKey, o.httpRootCert, o.tlsCertPollMs],
      [true, true, '/c/h.crt', '/c/h.key', '/c/ca.crt', 0],
    );
    assert.equal(o.grpcUseSsl, false);
    assert.throws(() => r('--http-use-ssl'), /--http-use-ssl needs --http-server-cert and --http-server-key/);
    assert.throws(() => r('--tls-cert-poll-ms=-1'), /--tls-cert-poll-ms must be between 0/);
  });

  it('every flag in the table either applies or says why it changes nothing', () => {
    for (const f of FLAGS) {
      assert.ok(f.apply !== undefined || (f.inert ?? '').length > 0, `--${f.name}`);
      assert.ok(!(f.apply !== undefined && f.inert !== undefined), `--${f.name} both applies and is inert`);
    }
  });
});

describe('--watch', () => {
  it('is off by default; on, it is poll mode that does not stop the start on a broken model', () => {
    assert.equal(parseFlags(['--model-repository=/a']).options.watch, false);
    const { options } = parseFlags(['--model-repository=/a', '--watch']);
    assert.equal(options.watch, true);
    assert.equal(options.modelControlMode, 'poll');
    assert.equal(options.exitOnError, false);
    assert.equal(options.watchMaxDirectories, 1024);
    const kept = parseFlags(['--model-repository=/a', '--watch', '--exit-on-error=true']).options;
    assert.equal(kept.exitOnError, true, 'an explicit --exit-on-error wins');
    assert.equal(
      parseFlags(['--model-repository=/a', '--watch', '--model-control-mode=poll']).options.modelControlMode,
      'poll',
    );
  });

  it('refuses another control mode and object-store repositories, saying why', () => {
    assert.throws(
      () => parseFlags(['--model-repository=/a', '--watch', '--model-control-mode=explicit']),
      /--watch reloads models as their files change, which is poll mode: it cannot be used with --model-control-mode=explicit/,
    );
    assert.throws(
      () => parseFlags(['--model-repository=/a', '--model-repository=s3://b/m', '--watch']),
      /--watch works on local folders only: 's3:\/\/b\/m' is an object store/,
    );
    assert.throws(
      () => parseFlags(['--model-repository=/a', '--watch-max-directories=0']),
      /--watch-max-directories must be between 1/,
    );
  });
});

void it('an unknown flag near a known one gets a "did you mean"; an unrelated one does not', () => {
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('', 'abc'), 3);
  assert.throws(
    () => parseFlags(['--model-repositry=/a']),
    /unrecognized option '--model-repositry'; did you mean '--model-repository'\? \(see --help\)/,
  );
  assert.throws(() => parseFlags(['--model-repository=/a', '--http-prot=1']), /did you mean '--http-port'\?/);
  assert.equal(closestFlag('grpc-port'), 'grpc-port');
  assert.throws(
    () => parseFlags(['--model-repository=/a', '--nope=1']),
    (err: Error) =>
      /unrecognized option '--nope' \(see --help\)/.test(err.message) && !/did you mean/.test(err.message),
  );
});
