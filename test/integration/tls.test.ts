// TLS on the real server: gRPC over TLS and mutual TLS (with @grpc/grpc-js through Nereid's own client, an
// independent TLS and HTTP/2 stack), HTTPS on the HTTP port, clear-text clients on TLS ports and TLS clients
// on clear-text ports (clean failures, the server keeps serving), certificate rotation without dropping
// open connections, start-up errors that name the flag and the file (and the exit code of `nereid`), and
// TLS through the in-process API.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http2 from 'node:http2';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { credentials, status as Code } from '@grpc/grpc-js';
import { GrpcClient, InferInput, NereidClientError } from '../../src/client/index.js';
import { parseFlags } from '../../src/compose/flags.js';
import { startNereid } from '../../src/compose/compose.js';
import { Logger } from '../../src/common/logger.js';
import { makeTestCertificates, type TestCertificates } from '../../src/frontends/tls-certs.testkit.js';
import { frame } from '../../src/frontends/grpc/transport/framing.js';
import { CLEAR_TEXT_MESSAGE as GRPC_CLEAR_TEXT } from '../../src/frontends/grpc/transport/tls.js';
import { CLEAR_TEXT_MESSAGE as HTTP_CLEAR_TEXT } from '../../src/frontends/http/transport/tls.js';
import { Nereid } from '../../src/index.js';
import { ROOT, makeRepository, removeRepository, startServer, type TestServer } from './harness.js';

const ECHO = `
name: "echo"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
`;

let certs: TestCertificates;
let repo: string;
before(() => {
  certs = makeTestCertificates();
  repo = makeRepository({ echo: { config: ECHO } });
});
after(() => {
  certs.remove();
  removeRepository(repo);
});

/** A gRPC client over TLS trusting the test CA, optionally with a client certificate. */
function tlsClient(port: number, client?: 'client' | 'other-client'): GrpcClient {
  const creds = credentials.createSsl(
    certs.read('ca.crt'),
    client ? certs.read(`${client}.key`) : null,
    client ? certs.read(`${client}.crt`) : null,
  );
  return new GrpcClient(`localhost:${port}`, { credentials: creds });
}

async function echoOnce(client: GrpcClient): Promise<number[]> {
  const input = new InferInput('INPUT0', [4], 'FP32').setData([1, 2.5, -3, 4]);
  return (await client.infer('echo', [input])).asArray('OUTPUT0', 'FP32');
}

/** A GET over HTTPS with the test CA; resolves with the status, body and the served certificate's serial. */
function httpsGet(
  port: number,
  urlPath: string,
  options: https.RequestOptions = {},
): Promise<{ status: number; body: string; serial: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      {
        host: '127.0.0.1',
        servername: 'localhost',
        port,
        path: urlPath,
        ca: certs.read('ca.crt'),
        agent: false,
        ...options,
      },
      (res) => {
        const serial = (res.socket as tls.TLSSocket).getPeerX509Certificate()?.serialNumber ?? '';
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, serial }));
      },
    );
    req.on('error', reject);
  });
}

/** ServerLive over an HTTP/2 session the test holds (so it knows which connection carries the call). */
function liveOver(session: http2.ClientHttp2Session): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ':method': 'POST',
      ':path': '/inference.GRPCInferenceService/ServerLive',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    req.on('trailers', (t: http2.IncomingHttpHeaders) => resolve(String(t['grpc-status'])));
    req.on('error', reject);
    req.resume();
    req.end(frame(Buffer.alloc(0)));
  });
}

async function grpcFailure(call: Promise<unknown>): Promise<NereidClientError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof NereidClientError, String(err));
    return err;
  }
  assert.fail('the call succeeded');
}

describe('gRPC over mutual TLS and HTTPS', () => {
  let server: TestServer;
  let grpcPort: number;
  let httpPort: number;

  before(async () => {
    server = await startServer([
      `--model-repository=${repo}`,
      '--grpc-use-ssl-mutual=true',
      `--grpc-server-cert=${certs.file('server.crt')}`,
      `--grpc-server-key=${certs.file('server.key')}`,
      `--grpc-root-cert=${certs.file('ca.crt')}`,
      '--http-use-ssl=true',
      `--http-server-cert=${certs.file('server.crt')}`,
      `--http-server-key=${certs.file('server.key')}`,
    ]);
    grpcPort = server.running.grpc!.port;
    httpPort = server.running.http!.port;
  });
  after(() => server?.stop());

  it('serves a gRPC client with a certificate from the CA', async () => {
    const client = tlsClient(grpcPort, 'client');
    try {
      assert.equal((await client.serverMetadata()).name, 'triton');
      assert.deepEqual(await echoOnce(client), [1, 2.5, -3, 4]);
    } finally {
      client.close();
    }
    assert.match(
      server.logs.join('\n'),
      /GRPC TLS using the certificate of 'O=Nereid tests, CN=localhost' \(serial 1001.*client certificates required/,
    );
  });

  it('refuses gRPC clients without a certificate or with one from another CA, and keeps serving', async () => {
    for (const who of [undefined, 'other-client'] as const) {
      const client = tlsClient(grpcPort, who);
      try {
        const err = await grpcFailure(client.serverMetadata());
        assert.equal(err.grpcCode, Code.UNAVAILABLE, `${who ?? 'no certificate'}: ${err.message}`);
      } finally {
        client.close();
      }
    }
    const ok = tlsClient(grpcPort, 'client');
    assert.equal(await ok.isServerLive(), true);
    ok.close();
  });

  it('answers a clear-text gRPC client with UNAVAILABLE saying to use TLS', async () => {
    const plain = new GrpcClient(`127.0.0.1:${grpcPort}`);
    try {
      const err = await grpcFailure(plain.serverMetadata());
      assert.equal(err.grpcCode, Code.UNAVAILABLE);
      assert.match(err.message, new RegExp(GRPC_CLEAR_TEXT.replace(/[()[\]<>.]/g, '\\$&')));
    } finally {
      plain.close();
    }
  });

  it('serves HTTPS, and answers plain HTTP on that port with 400 saying to use https', async () => {
    const ok = await httpsGet(httpPort, '/v2/models/echo');
    assert.equal(ok.status, 200);
    assert.equal((JSON.parse(ok.body) as { name: string }).name, 'echo');
    const plain = await fetch(`http://127.0.0.1:${httpPort}/v2`);
    assert.equal(plain.status, 400);
    assert.deepEqual(await plain.json(), { error: HTTP_CLEAR_TEXT });
    assert.equal((await httpsGet(httpPort, '/v2/health/ready')).status, 200);
  });
});

describe('TLS clients on clear-text ports', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer([`--model-repository=${repo}`]);
  });
  after(() => server?.stop());

  it('fail cleanly and the server keeps serving', async () => {
    const client = tlsClient(server.running.grpc!.port);
    const err = await grpcFailure(client.serverMetadata());
    assert.equal(err.grpcCode, Code.UNAVAILABLE, err.message);
    client.close();
    await assert.rejects(
      httpsGet(server.running.http!.port, '/v2'),
      /wrong version number|EPROTO|packet length/i,
    );

    const plain = new GrpcClient(`127.0.0.1:${server.running.grpc!.port}`);
    assert.equal(await plain.isServerLive(), true);
    plain.close();
    assert.equal((await fetch(`${server.url}/v2/health/live`)).status, 200);
  });
});

describe('certificate rotation', () => {
  it('a new connection gets the new certificate, one opened before keeps working', async () => {
    const dir = makeTestCertificates(); // a folder of its own: this test rewrites server.crt/key
    const server = await startServer([
      `--model-repository=${repo}`,
      '--grpc-use-ssl=true',
      `--grpc-server-cert=${dir.file('server.crt')}`,
      `--grpc-server-key=${dir.file('server.key')}`,
      '--http-use-ssl=true',
      `--http-server-cert=${dir.file('server.crt')}`,
      `--http-server-key=${dir.file('server.key')}`,
      '--tls-cert-poll-ms=0',
    ]);
    const grpcCa = dir.read('ca.crt');
    const peerSerial = async (port: number): Promise<string> =>
      new Promise((resolve, reject) => {
        const s = tls.connect(
          { host: '127.0.0.1', port, servername: 'localhost', ca: grpcCa, ALPNProtocols: ['h2'] },
          () => {
            resolve(s.getPeerX509Certificate()?.serialNumber ?? '');
            s.destroy();
          },
        );
        s.on('error', reject);
      });
    const grpcPort = server.running.grpc!.port;
    const before = new GrpcClient(`localhost:${grpcPort}`, { credentials: credentials.createSsl(grpcCa) });
    // A connection of the test's own, so it can tell it is still the same one after the rotation.
    const session = http2.connect(`https://localhost:${grpcPort}`, { ca: grpcCa });
    session.on('error', () => undefined);
    try {
      assert.deepEqual(await echoOnce(before), [1, 2.5, -3, 4]); // its connection is open from here on
      assert.equal(await liveOver(session), '0');
      assert.equal(await peerSerial(grpcPort), '1001');

      dir.copy('server-b.crt', 'server.crt');
      dir.copy('server-b.key', 'server.key');
      const results = await server.running.reloadCertificates('SIGHUP');
      assert.deepEqual(results, [
        { endpoint: 'grpc', reloaded: true },
        { endpoint: 'http', reloaded: true },
      ]);
      assert.equal(await peerSerial(grpcPort), '1002');
      assert.equal((await httpsGet(server.running.http!.port, '/v2', { ca: grpcCa })).serial, '1002');
      const after = new GrpcClient(`localhost:${grpcPort}`, { credentials: credentials.createSsl(grpcCa) });
      assert.deepEqual(await echoOnce(after), [1, 2.5, -3, 4]);
      after.close();
      // The connections opened before the rotation still carry calls, with the certificate they started with.
      assert.deepEqual(await echoOnce(before), [1, 2.5, -3, 4]);
      assert.equal(await liveOver(session), '0');
      assert.equal(session.closed || session.destroyed, false);
      assert.equal((session.socket as tls.TLSSocket).getPeerX509Certificate()?.serialNumber, '1001');

      // A broken update keeps the certificate in use.
      dir.copy('server.key', 'server.crt'); // not a certificate
      assert.deepEqual(
        (await server.running.reloadCertificates('SIGHUP')).map((r) => r.reloaded),
        [false, false],
      );
      assert.equal(await peerSerial(grpcPort), '1002');
      assert.match(
        server.logs.join('\n'),
        /GRPC TLS certificate reload \(SIGHUP\) failed, still using the certificate of 'O=Nereid tests, CN=nereid-reloaded'.*--grpc-server-cert '.*server\.crt': no PEM certificate/,
      );
      assert.deepEqual(await echoOnce(before), [1, 2.5, -3, 4]);
      assert.equal(await liveOver(session), '0');
    } finally {
      session.close();
      before.close();
      await server.stop();
      dir.remove();
    }
  });
});

describe('start-up errors', () => {
  const start = (args: string[]) =>
    startNereid(
      parseFlags([
        `--model-repository=${repo}`,
        '--http-port=0',
        '--grpc-port=0',
        '--allow-metrics=false',
        ...args,
      ]).options,
      new Logger({}, () => undefined),
    );

  it('name the flag and the file, before any model loads', async () => {
    await assert.rejects(
      start([
        '--grpc-use-ssl',
        `--grpc-server-cert=${certs.file('missing.crt')}`,
        `--grpc-server-key=${certs.file('server.key')}`,
      ]),
      {
        name: 'NereidError',
        message: `--grpc-server-cert '${certs.file('missing.crt')}': cannot open the file: no such file`,
      },
    );
    await assert.rejects(
      start([
        '--http-use-ssl',
        `--http-server-cert=${certs.file('server.crt')}`,
        `--http-server-key=${certs.file('client.key')}`,
      ]),
      /--http-server-key '.*client\.key' does not match the certificate of 'O=Nereid tests, CN=localhost'/,
    );
  });

  it('make `nereid` exit non-zero with the message', async () => {
    const run = promisify(execFile);
    const result = await run(process.execPath, [
      path.join(ROOT, 'bin/nereid.js'),
      `--model-repository=${repo}`,
      '--http-port=0',
      '--grpc-port=0',
      '--allow-metrics=false',
      '--grpc-use-ssl-mutual=true',
      `--grpc-server-cert=${certs.file('server.crt')}`,
      `--grpc-server-key=${certs.file('server.key')}`,
      `--grpc-root-cert=${certs.file('nowhere/ca.crt')}`,
    ]).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(result.code, 1);
    assert.match(result.stderr, /--grpc-root-cert '.*nowhere\/ca\.crt': cannot open the file: no such file/);
  });
});

describe('TLS through the in-process API', () => {
  it('serves gRPC over TLS from start() and HTTPS from listenHttp(), and reloads', async () => {
    const server = await Nereid.start({
      modelRepository: repo,
      grpc: { tls: { certFile: certs.file('server.crt'), keyFile: certs.file('server.key') } },
      log: false,
    });
    try {
      const client = tlsClient(server.grpc!.port);
      assert.deepEqual(await echoOnce(client), [1, 2.5, -3, 4]);
      client.close();
      const http = await server.listenHttp({
        tls: {
          certFile: certs.file('server.crt'),
          keyFile: certs.file('server.key'),
          mutual: true,
          rootCertFile: certs.file('ca.crt'),
        },
      });
      const ok = await httpsGet(http.port, '/v2/health/live', {
        cert: certs.read('client.crt'),
        key: certs.read('client.key'),
      });
      assert.equal(ok.status, 200);
      await assert.rejects(httpsGet(http.port, '/v2/health/live'));
      assert.equal(await server.reloadCertificates(), true);
      await assert.rejects(
        server.listenGrpc({ tls: { certFile: certs.file('server.crt'), keyFile: certs.file('server.key') } }),
        /already listening/,
      );
      await server.stopListening('http');
      await assert.rejects(
        server.listenHttp({ tls: { certFile: certs.file('server.crt'), keyFile: certs.file('x.key') } }),
        /tls\.keyFile '.*x\.key': cannot open the file: no such file/,
      );
    } finally {
      await server.close();
    }
  });
});
