import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { Logger } from '../common/logger.js';
import { makeTestCertificates, type TestCertificates } from './tls-certs.testkit.js';
import {
  checkTlsMaterial,
  divertClearText,
  loadTlsMaterial,
  MAX_PEM_FILE_BYTES,
  TlsCredentials,
  validityWarning,
  type TlsFiles,
} from './tls.js';

const NAMES = { cert: '--grpc-server-cert', key: '--grpc-server-key', rootCert: '--grpc-root-cert' };

let certs: TestCertificates;
before(() => {
  certs = makeTestCertificates();
});
after(() => certs.remove());

/** The files of a server certificate in a folder of the test's own, so rotations do not touch the others. */
function ownFiles(name: string, mutual = false): TlsFiles & { dir: string } {
  const dir = path.join(certs.dir, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'tls.crt'), certs.read('server.crt'));
  writeFileSync(path.join(dir, 'tls.key'), certs.read('server.key'));
  writeFileSync(path.join(dir, 'ca.crt'), certs.read('ca.crt'));
  return {
    dir,
    certFile: path.join(dir, 'tls.crt'),
    keyFile: path.join(dir, 'tls.key'),
    rootCertFile: path.join(dir, 'ca.crt'),
    mutual,
  };
}

const files = (cert: string, key: string, extra: Partial<TlsFiles> = {}): TlsFiles => ({
  certFile: certs.file(cert),
  keyFile: certs.file(key),
  mutual: false,
  ...extra,
});

function capture(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: new Logger({}, (l) => lines.push(l)), lines };
}

/** Waits for `condition`, checking every 20 ms, failing after a generous deadline (not a timing assertion). */
async function until(condition: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('loadTlsMaterial', () => {
  it('reads a certificate and its key, and the CA for mutual TLS', async () => {
    const m = await loadTlsMaterial(files('server.crt', 'server.key'), NAMES);
    assert.match(m.leaf.subject, /CN=localhost/);
    assert.equal(m.leaf.serialNumber, '1001');
    assert.equal(m.ca, undefined, 'the root is read only for mutual TLS');
    const mutual = await loadTlsMaterial(
      files('server.crt', 'server.key', { mutual: true, rootCertFile: certs.file('ca.crt') }),
      NAMES,
    );
    assert.deepEqual(mutual.ca, certs.read('ca.crt'));
  });

  it('names the flag and the file of whatever is wrong', async () => {
    const refused = async (f: TlsFiles, pattern: RegExp): Promise<void> => {
      await assert.rejects(loadTlsMaterial(f, NAMES), (err: Error) => {
        assert.equal(err.name, 'NereidError');
        assert.match(err.message, pattern);
        return true;
      });
    };
    const missing = certs.file('nope.crt');
    await refused(
      files('nope.crt', 'server.key'),
      new RegExp(`^--grpc-server-cert '${missing}': cannot open the file: no such file$`),
    );
    await refused(
      files('server.crt', 'nope.key'),
      /^--grpc-server-key '.*nope\.key': cannot open the file: no such file/,
    );
    await refused(
      { ...files('server.crt', 'server.key'), certFile: certs.dir },
      /--grpc-server-cert '.*': not a regular file/,
    );
    await refused(
      files('server.key', 'server.key'),
      /--grpc-server-cert '.*server\.key': no PEM certificate/,
    );
    await refused(files('server.crt', 'server.crt'), /--grpc-server-key '.*server\.crt': no PEM private key/);
    await refused(
      files('server.crt', 'server-b.key'),
      /^--grpc-server-key '.*server-b\.key' does not match the certificate of 'O=Nereid tests, CN=localhost' \(serial 1001, .*\) in --grpc-server-cert '.*server\.crt'$/,
    );
    await refused(
      files('server.crt', 'server.key', { mutual: true }),
      /mutual TLS needs --grpc-root-cert: the CA certificate\(s\) that sign client certificates/,
    );
    await refused(
      files('server.crt', 'server.key', { mutual: true, rootCertFile: certs.file('client.key') }),
      /--grpc-root-cert '.*client\.key': no PEM certificate/,
    );
  });

  it('refuses a certificate that does not parse, an encrypted key and a file too large to be PEM', async () => {
    const pem = certs.read('server.crt').toString();
    const broken = certs.file('broken.crt');
    writeFileSync(broken, pem.replace(/\n[A-Za-z0-9+/]{10}/, '\nAAAAAAAAAA'));
    await assert.rejects(
      loadTlsMaterial(files('broken.crt', 'server.key'), NAMES),
      /broken\.crt': the certificate does not parse/,
    );
    // A chain names which certificate is wrong.
    writeFileSync(broken, pem + '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    await assert.rejects(
      loadTlsMaterial(files('broken.crt', 'server.key'), NAMES),
      /certificate 2 of 2 does not parse/,
    );

    execFileSync('openssl', [
      'pkey',
      '-in',
      certs.file('server.key'),
      '-aes256',
      '-passout',
      'pass:secret',
      '-out',
      certs.file('encrypted.key'),
    ]);
    await assert.rejects(
      loadTlsMaterial(files('server.crt', 'encrypted.key'), NAMES),
      /encrypted\.key': the key is encrypted with a passphrase, which Nereid cannot take/,
    );

    writeFileSync(certs.file('huge.crt'), Buffer.alloc(MAX_PEM_FILE_BYTES + 1, 0x41));
    await assert.rejects(
      loadTlsMaterial(files('huge.crt', 'server.key'), NAMES),
      /huge\.crt': \d+ bytes is too large for a PEM file/,
    );
  });

  it('takes a chain (the server certificate first) and checks the key against the first', () => {
    const chain = Buffer.concat([certs.read('server.crt'), certs.read('ca.crt')]);
    const m = checkTlsMaterial(
      { cert: chain, key: certs.read('server.key'), ca: undefined },
      files('server.crt', 'server.key'),
      NAMES,
    );
    assert.equal(m.leaf.serialNumber, '1001');
  });
});

describe('validityWarning', () => {
  it('warns about an expired certificate or one not valid yet, not about a current one', () => {
    const expired = new X509Certificate(certs.read('expired.crt'));
    assert.match(
      validityWarning(expired) ?? '',
      /expired on Jan {2}2 00:00:00 2020 GMT; clients will refuse it/,
    );
    const current = new X509Certificate(certs.read('server.crt'));
    assert.equal(validityWarning(current), undefined);
    assert.match(
      validityWarning(current, Date.parse(current.validFrom) - 60_000) ?? '',
      /not valid before .*; clients will refuse it until then/,
    );
  });
});

/** A TLS echo server with `credentials`, on a free loopback port. */
async function echoServer(credentials: TlsCredentials): Promise<{ server: tls.Server; port: number }> {
  const server = tls.createServer(credentials.serverOptions(), (socket) => {
    socket.on('error', () => undefined);
    socket.pipe(socket);
  });
  credentials.attach(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

function connect(port: number, options: tls.ConnectionOptions = {}): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port,
      servername: 'localhost',
      ca: certs.read('ca.crt'),
      ...options,
    });
    socket.once('secureConnect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** The serial of the certificate a new connection gets. */
async function servedSerial(port: number): Promise<string> {
  const socket = await connect(port);
  const serial = socket.getPeerX509Certificate()?.serialNumber ?? '';
  socket.destroy();
  return serial;
}

function echo(socket: tls.TLSSocket, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    socket.once('data', (d: Buffer) => resolve(d.toString()));
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('the connection closed')));
    socket.write(text);
  });
}

describe('TlsCredentials', () => {
  it('reload() serves the new certificate to new connections while open ones keep working', async () => {
    const f = ownFiles('reload');
    const { log, lines } = capture();
    const credentials = await TlsCredentials.load({
      files: f,
      names: NAMES,
      label: 'GRPC',
      log,
      pollIntervalMs: 0,
    });
    const { server, port } = await echoServer(credentials);
    try {
      const before = await connect(port);
      assert.equal(before.getPeerX509Certificate()?.serialNumber, '1001');

      writeFileSync(f.certFile, certs.read('server-b.crt'));
      writeFileSync(f.keyFile, certs.read('server-b.key'));
      assert.equal(await credentials.reload('SIGHUP'), true);
      assert.equal(credentials.certificate.serialNumber, '1002');
      assert.equal(await servedSerial(port), '1002');
      assert.match(
        lines.join('\n'),
        /GRPC TLS certificate reloaded \(SIGHUP\): now using the certificate of 'O=Nereid tests, CN=nereid-reloaded' \(serial 1002/,
      );

      // The connection opened before the reload still works, with the certificate it started with.
      assert.equal(await echo(before, 'still here'), 'still here');
      before.destroy();
    } finally {
      credentials.close();
      server.close();
    }
  });

  it('a reload that fails keeps the certificate in use and says why', async () => {
    const f = ownFiles('failing');
    const { log, lines } = capture();
    const credentials = await TlsCredentials.load({
      files: f,
      names: NAMES,
      label: 'HTTP',
      log,
      pollIntervalMs: 0,
    });
    const { server, port } = await echoServer(credentials);
    try {
      writeFileSync(f.certFile, certs.read('server-b.crt')); // the key is still server.key's
      assert.equal(await credentials.reload('SIGHUP'), false);
      const error = lines.find((l) => l.startsWith('E'));
      assert.match(
        error ?? '',
        /HTTP TLS certificate reload \(SIGHUP\) failed, still using the certificate of 'O=Nereid tests, CN=localhost' \(serial 1001.*--grpc-server-key '.*tls\.key' does not match/,
      );
      assert.equal(await servedSerial(port), '1001');

      writeFileSync(f.certFile, 'not a certificate');
      assert.equal(await credentials.reload('SIGHUP'), false);
      writeFileSync(f.certFile, certs.read('server.crt'));
      rmSync(f.keyFile);
      assert.equal(await credentials.reload('SIGHUP'), false);
      assert.match(
        lines.filter((l) => l.startsWith('E')).at(-1) ?? '',
        /--grpc-server-key '.*': cannot open the file: no such file/,
      );
      assert.equal(await servedSerial(port), '1001');
      assert.equal(credentials.certificate.serialNumber, '1001');
    } finally {
      credentials.close();
      server.close();
    }
  });

  it('the poll picks up new files, including a Kubernetes-style symlink swap, and logs a bad update once', async () => {
    // Kubernetes mounts a secret as <dir>/tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>/, and updates it
    // by pointing ..data at a new folder in one rename.
    const dir = path.join(certs.dir, 'k8s');
    const version = (name: string, cert: string, key: string): void => {
      mkdirSync(path.join(dir, name), { recursive: true });
      writeFileSync(path.join(dir, name, 'tls.crt'), certs.read(cert));
      writeFileSync(path.join(dir, name, 'tls.key'), certs.read(key));
    };
    const point = (name: string): void => {
      symlinkSync(name, path.join(dir, '..data_tmp'));
      renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
    };
    version('..v1', 'server.crt', 'server.key');
    point('..v1');
    symlinkSync('..data/tls.crt', path.join(dir, 'tls.crt'));
    symlinkSync('..data/tls.key', path.join(dir, 'tls.key'));

    const { log, lines } = capture();
    const credentials = await TlsCredentials.load({
      files: { certFile: path.join(dir, 'tls.crt'), keyFile: path.join(dir, 'tls.key'), mutual: false },
      names: NAMES,
      label: 'GRPC',
      log,
      pollIntervalMs: 25,
    });
    const { server, port } = await echoServer(credentials);
    try {
      const open = await connect(port);
      version('..v2', 'server-b.crt', 'server-b.key');
      point('..v2');
      await until(async () => (await servedSerial(port)) === '1002', 'the poll to serve the new certificate');
      assert.match(lines.join('\n'), /certificate reloaded \(the files changed\)/);
      assert.equal(await echo(open, 'ping'), 'ping');
      open.destroy();

      // A bad update (a key that does not match): logged once, the certificate in use stays.
      version('..v3', 'server.crt', 'server-b.key');
      point('..v3');
      await until(() => lines.some((l) => l.startsWith('E')), 'the failed reload to be logged');
      const polled = lines.length;
      await new Promise((r) => setTimeout(r, 250)); // several more polls of the same bad files
      assert.equal(lines.filter((l) => l.startsWith('E')).length, 1, lines.slice(polled).join('\n'));
      assert.equal(await servedSerial(port), '1002');

      // Fixed: taken.
      version('..v4', 'server.crt', 'server.key');
      point('..v4');
      await until(async () => (await servedSerial(port)) === '1001', 'the fixed certificate to be served');
    } finally {
      credentials.close();
      server.close();
    }
  });

  it('mutual TLS: a client certificate from the CA is taken, none or one from another CA is refused', async () => {
    const f = ownFiles('mutual', true);
    const credentials = await TlsCredentials.load({
      files: f,
      names: NAMES,
      label: 'GRPC',
      log: capture().log,
      pollIntervalMs: 0,
    });
    const { server, port } = await echoServer(credentials);
    try {
      const ok = await connect(port, { cert: certs.read('client.crt'), key: certs.read('client.key') });
      assert.equal(await echo(ok, 'hello'), 'hello');
      ok.destroy();
      // TLS 1.3 reports the refusal after the client's side of the handshake: the first read fails.
      const refused = async (options: tls.ConnectionOptions): Promise<void> => {
        await assert.rejects(async () => {
          const s = await connect(port, options);
          await echo(s, 'hello');
        }, /certificate required|unknown ca|alert|ECONNRESET|closed/i);
      };
      await refused({});
      await refused({ cert: certs.read('other-client.crt'), key: certs.read('other-client.key') });
      // A reload keeps asking for client certificates, checked against the (re-read) root file.
      assert.equal(await credentials.reload(), true);
      const again = await connect(port, { cert: certs.read('client.crt'), key: certs.read('client.key') });
      assert.equal(await echo(again, 'hello'), 'hello');
      again.destroy();
      await refused({});
      writeFileSync(f.rootCertFile ?? '', certs.read('other-ca.crt'));
      assert.equal(await credentials.reload(), true);
      await refused({ cert: certs.read('client.crt'), key: certs.read('client.key') });
      const other = await connect(port, {
        cert: certs.read('other-client.crt'),
        key: certs.read('other-client.key'),
      });
      assert.equal(await echo(other, 'hello'), 'hello');
      other.destroy();
    } finally {
      credentials.close();
      server.close();
    }
  });
});

describe('divertClearText', () => {
  it('hands clear-text connections over with their first bytes intact; TLS ones go on to the TLS server', async () => {
    const credentials = await TlsCredentials.load({
      files: files('server.crt', 'server.key'),
      names: NAMES,
      label: 'HTTP',
      log: capture().log,
      pollIntervalMs: 0,
    });
    const server = tls.createServer(credentials.serverOptions(), (socket) => socket.pipe(socket));
    divertClearText(server, (socket) => {
      let got = '';
      socket.on('data', (d: Buffer) => {
        got += d.toString();
        if (got.endsWith('\r\n\r\n')) socket.end(`clear text: ${got}`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const s = net.connect(port, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\n\r\n'));
        let got = '';
        s.on('data', (d: Buffer) => (got += d.toString()));
        s.on('end', () => resolve(got));
        s.on('error', reject);
      });
      assert.equal(answer, 'clear text: GET / HTTP/1.1\r\n\r\n');
      const secure = await connect(port);
      assert.equal(await echo(secure, 'over TLS'), 'over TLS');
      secure.destroy();
      // A client that connects and closes without a byte leaves nothing behind.
      await new Promise<void>((resolve) =>
        net.connect(port, '127.0.0.1', function (this: net.Socket) {
          this.end(resolve);
        }),
      );
      assert.equal(await servedSerial(port), '1001', 'the server still serves');
    } finally {
      credentials.close();
      server.close();
    }
  });
});
