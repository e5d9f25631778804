/**
 * TLS for the HTTP and gRPC frontends, in one place: reads and checks the PEM files an operator names (the
 * server certificate, its key, and for mutual TLS the CA that signs client certificates), gives the
 * options Node's TLS servers are created with, and swaps the certificate of running servers when the files
 * change (a poll of their contents) or when reload() is called (SIGHUP). A swap goes through
 * setSecureContext(), which only affects handshakes that start afterwards, so open connections are never
 * dropped. A reload that fails (a half-written file, a key that does not match) keeps the certificate in use
 * and logs why. Frontends only create their server with serverOptions() and attach() it.
 */
import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { open } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { createSecureContext, type SecureContextOptions, type Server, type TlsOptions } from 'node:tls';
import { invalidArg, NereidError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';

/** The files of one TLS endpoint. */
export interface TlsFiles {
  /** PEM certificate: the server's own first, then any intermediates. */
  readonly certFile: string;
  /** PEM private key of that certificate, unencrypted. */
  readonly keyFile: string;
  /** PEM CA certificate(s) that sign client certificates; read only when `mutual`. */
  readonly rootCertFile?: string;
  /** Require and verify a client certificate on every connection. */
  readonly mutual: boolean;
}

/** How errors and log lines name each file: the flag (or option) that set it, e.g. `--grpc-server-cert`. */
export interface TlsFileNames {
  readonly cert: string;
  readonly key: string;
  readonly rootCert: string;
}

export interface TlsCredentialsOptions {
  readonly files: TlsFiles;
  readonly names: TlsFileNames;
  /** Names the endpoint in log lines: 'GRPC' or 'HTTP'. */
  readonly label: string;
  readonly log: Logger;
  /** Milliseconds between looks at the files for a new certificate; 0 = only reload() (SIGHUP). */
  readonly pollIntervalMs: number;
}

/** A PEM file larger than this is refused: certificates are a few KB; this catches a wrong path. */
export const MAX_PEM_FILE_BYTES = 1 << 20;

/** The PEM texts of one endpoint and the certificate they carry, checked. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Only with mutual TLS. */
  readonly ca: Buffer | undefined;
  /** The server's own certificate (the first of `cert`). */
  readonly leaf: X509Certificate;
}

/** What a read of the files gave: their bytes, or why one could not be read (which is part of a change). */
interface Snapshot {
  readonly cert: Buffer | Error;
  readonly key: Buffer | Error;
  readonly ca: Buffer | Error | undefined;
  readonly fingerprint: string;
}

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** Reads one PEM file: a regular file (symlinks followed, as Kubernetes mounts secrets) of bounded size. */
export async function readPemFile(file: string, name: string): Promise<Buffer> {
  const where = `${name} '${file}'`;
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    throw invalidArg(`${where}: cannot open the file: ${reason(err)}`);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw invalidArg(`${where}: not a regular file`);
    if (stat.size > MAX_PEM_FILE_BYTES) {
      throw invalidArg(
        `${where}: ${stat.size} bytes is too large for a PEM file (at most ${MAX_PEM_FILE_BYTES})`,
      );
    }
    // Sized from stat (the poll reads these files every few seconds), grown if the file grows meanwhile,
    // never past one byte over the limit.
    let buf = Buffer.alloc(stat.size + 1);
    let length = 0;
    for (;;) {
      if (length === buf.length) {
        if (length > MAX_PEM_FILE_BYTES) throw invalidArg(`${where}: too large for a PEM file`);
        const bigger = Buffer.alloc(Math.min(buf.length * 2, MAX_PEM_FILE_BYTES + 1));
        buf.copy(bigger);
        buf = bigger;
      }
      const { bytesRead } = await handle.read(buf, length, buf.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > MAX_PEM_FILE_BYTES) throw invalidArg(`${where}: too large for a PEM file`);
    return buf.subarray(0, length);
  } catch (err) {
    if (err instanceof NereidError) throw err;
    throw invalidArg(`${where}: cannot read the file: ${reason(err)}`);
  } finally {
    await handle.close();
  }
}

function reason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ENOENT') return 'no such file';
  if (e?.code === 'EACCES' || e?.code === 'EPERM') return 'permission denied';
  if (e?.code === 'EISDIR') return 'is a directory';
  return err instanceof Error ? err.message : String(err);
}

/** Every certificate of a PEM text, parsed; `what` names the file in errors. */
function parseCertificates(pem: Buffer, what: string): X509Certificate[] {
  const blocks = pem.toString('latin1').match(CERT_BLOCK) ?? [];
  if (blocks.length === 0)
    throw invalidArg(`${what}: no PEM certificate in the file (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      const which = blocks.length > 1 ? `certificate ${i + 1} of ${blocks.length}` : 'the certificate';
      throw invalidArg(
        `${what}: ${which} does not parse: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  });
}

function parsePrivateKey(pem: Buffer, what: string): KeyObject {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem.toString('latin1'))) {
    throw invalidArg(`${what}: no PEM private key in the file (-----BEGIN PRIVATE KEY-----)`);
  }
  try {
    return createPrivateKey({ key: pem, format: 'pem' });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_MISSING_PASSPHRASE' || /ENCRYPTED/.test(pem.toString('latin1'))) {
      throw invalidArg(
        `${what}: the key is encrypted with a passphrase, which Nereid cannot take; decrypt it (openssl pkey -in <key> -out <plain key>) and protect the file instead`,
      );
    }
    throw invalidArg(`${what}: the private key does not parse: ${e.message}`);
  }
}

/**
 * Checks the PEM texts of one endpoint: the certificate file holds certificates, the key file a key that
 * belongs to the first of them, the root file (mutual TLS) CA certificates, and OpenSSL takes them all.
 * Throws INVALID_ARG naming the flag and the file.
 */
export function checkTlsMaterial(
  texts: { cert: Buffer; key: Buffer; ca: Buffer | undefined },
  files: TlsFiles,
  names: TlsFileNames,
): TlsMaterial {
  const certWhere = `${names.cert} '${files.certFile}'`;
  const keyWhere = `${names.key} '${files.keyFile}'`;
  const [leaf] = parseCertificates(texts.cert, certWhere);
  const key = parsePrivateKey(texts.key, keyWhere);
  if (!leaf.checkPrivateKey(key)) {
    throw invalidArg(`${keyWhere} does not match ${describeCertificate(leaf)} in ${certWhere}`);
  }
  if (texts.ca !== undefined) parseCertificates(texts.ca, `${names.rootCert} '${files.rootCertFile ?? ''}'`);
  try {
    createSecureContext(secureContextOptions(texts));
  } catch (err) {
    throw invalidArg(
      `${certWhere}, ${keyWhere}: OpenSSL refuses them: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return { cert: texts.cert, key: texts.key, ca: texts.ca, leaf };
}

/** Reads and checks the files of one endpoint (see checkTlsMaterial). */
export async function loadTlsMaterial(files: TlsFiles, names: TlsFileNames): Promise<TlsMaterial> {
  return checkTlsMaterial(await readTexts(files, names), files, names);
}

async function readTexts(
  files: TlsFiles,
  names: TlsFileNames,
): Promise<{ cert: Buffer; key: Buffer; ca: Buffer | undefined }> {
  if (files.mutual && !files.rootCertFile) {
    throw invalidArg(
      `mutual TLS needs ${names.rootCert}: the CA certificate(s) that sign client certificates`,
    );
  }
  const [cert, key, ca] = await Promise.all([
    readPemFile(files.certFile, names.cert),
    readPemFile(files.keyFile, names.key),
    files.mutual ? readPemFile(files.rootCertFile ?? '', names.rootCert) : undefined,
  ]);
  return { cert, key, ca };
}

function secureContextOptions(texts: {
  cert: Buffer;
  key: Buffer;
  ca: Buffer | undefined;
}): SecureContextOptions {
  return {
    cert: texts.cert,
    key: texts.key,
    ...(texts.ca !== undefined && { ca: texts.ca }),
    minVersion: 'TLSv1.2',
  };
}

/** One line about a certificate for logs: subject, serial, validity. */
export function describeCertificate(cert: X509Certificate): string {
  return `the certificate of '${cert.subject.replace(/\n/g, ', ')}' (serial ${cert.serialNumber}, valid until ${cert.validTo})`;
}

/** A warning when the certificate is outside its validity period (clients will refuse it), else undefined. */
export function validityWarning(cert: X509Certificate, now = Date.now()): string | undefined {
  if (Date.parse(cert.validTo) < now)
    return `the certificate expired on ${cert.validTo}; clients will refuse it`;
  if (Date.parse(cert.validFrom) > now) {
    return `the certificate is not valid before ${cert.validFrom}; clients will refuse it until then`;
  }
  return undefined;
}

/**
 * The certificate of one TLS endpoint, kept current. load() reads and checks the files (start-up errors
 * name the flag and the file); the servers attach()ed get every new certificate. The poll compares the
 * files' contents (so a Kubernetes secret update that swaps a symlink, an editor that writes in place or
 * renames over the file are all seen) and applies new contents once two looks in a row agree, so a cert and
 * key replaced one after the other are taken together.
 */
export class TlsCredentials {
  private material: TlsMaterial;
  private fingerprint: string;
  private readonly servers = new Set<Server>();
  private timer: NodeJS.Timeout | undefined;
  /** Contents seen once by the poll, applied when the next poll sees them again. */
  private pending: string | undefined;
  /** Contents a reload already failed on: not retried (nor logged again) until the files change. */
  private failed: string | undefined;
  /** Reloads run one at a time, in order. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly options: TlsCredentialsOptions,
    first: { material: TlsMaterial; fingerprint: string },
  ) {
    this.material = first.material;
    this.fingerprint = first.fingerprint;
  }

  /** Reads and checks the files; throws INVALID_ARG naming the flag and file. Starts the poll. */
  static async load(options: TlsCredentialsOptions): Promise<TlsCredentials> {
    const texts = await readTexts(options.files, options.names);
    const material = checkTlsMaterial(texts, options.files, options.names);
    const credentials = new TlsCredentials(options, { material, fingerprint: fingerprintOf(texts) });
    credentials.announce('using');
    if (options.pollIntervalMs > 0) credentials.startPolling(options.pollIntervalMs);
    return credentials;
  }

  /** The server certificate in use. */
  get certificate(): X509Certificate {
    return this.material.leaf;
  }

  get mutual(): boolean {
    return this.options.files.mutual;
  }

  /** Options for tls.createServer / https.createServer / http2.createSecureServer. */
  serverOptions(): TlsOptions {
    const mutual = this.options.files.mutual;
    return {
      ...secureContextOptions(this.material),
      // Mutual TLS: a client without a certificate from the root CA fails the handshake.
      requestCert: mutual,
      rejectUnauthorized: mutual,
    };
  }

  /** A server created with serverOptions(): it gets each new certificate; failed handshakes are logged verbosely. */
  attach(server: Server): void {
    this.servers.add(server);
    server.on('close', () => this.servers.delete(server));
    server.on('tlsClientError', (err: Error, socket: Socket) => {
      // A port scan or a clear-text client: its connection closes, the server carries on.
      const log = this.options.log;
      if (log.isVerbose()) {
        log.verbose(
          `${this.options.label} TLS handshake from ${socket.remoteAddress ?? '?'} failed: ${err.message}`,
        );
      }
    });
  }

  /**
   * Reads the files again and, when they check out, serves the new certificate on new connections (open ones
   * keep theirs). Resolves true when the new certificate is in use; false (logged) when the old one stays.
   */
  reload(why = 'reload requested'): Promise<boolean> {
    return this.enqueue(async () => this.apply(await this.snapshot(), why));
  }

  /** Stops the poll. */
  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private startPolling(intervalMs: number): void {
    let polling = false;
    this.timer = setInterval(() => {
      if (polling) return; // a slow file system: no pile of looks behind it
      polling = true;
      void this.enqueue(() => this.poll())
        .catch((err: unknown) => {
          this.options.log.error(
            `${this.options.label} TLS: looking at the certificate files failed: ${String(err)}`,
          );
        })
        .finally(() => (polling = false));
    }, intervalMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    if (this.closed) return;
    const snap = await this.snapshot();
    if (snap.fingerprint === this.fingerprint) {
      this.pending = undefined;
      return;
    }
    if (snap.fingerprint !== this.pending) {
      this.pending = snap.fingerprint; // seen once: apply when the next look agrees
      return;
    }
    this.pending = undefined;
    if (snap.fingerprint === this.failed) return;
    this.apply(snap, 'the files changed');
  }

  private async snapshot(): Promise<Snapshot> {
    const { files, names } = this.options;
    const settle = (p: Promise<Buffer>): Promise<Buffer | Error> =>
      p.catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
    const [cert, key, ca] = await Promise.all([
      settle(readPemFile(files.certFile, names.cert)),
      settle(readPemFile(files.keyFile, names.key)),
      files.mutual ? settle(readPemFile(files.rootCertFile ?? '', names.rootCert)) : undefined,
    ]);
    return { cert, key, ca, fingerprint: fingerprintOf({ cert, key, ca }) };
  }

  private apply(snap: Snapshot, why: string): boolean {
    const { log, label, files, names } = this.options;
    try {
      for (const part of [snap.cert, snap.key, snap.ca]) if (part instanceof Error) throw part;
      const material = checkTlsMaterial(
        { cert: snap.cert as Buffer, key: snap.key as Buffer, ca: snap.ca as Buffer | undefined },
        files,
        names,
      );
      const context = secureContextOptions(material);
      for (const server of this.servers) server.setSecureContext(context);
      this.material = material;
      this.fingerprint = snap.fingerprint;
      this.failed = undefined;
      this.announce(`certificate reloaded (${why}): now using`);
      return true;
    } catch (err) {
      this.failed = snap.fingerprint;
      log.error(
        `${label} TLS certificate reload (${why}) failed, still using ${describeCertificate(this.material.leaf)}: ${err instanceof Error ? err.message : String(err)}`,
      );
      return false;
    }
  }

  private announce(what: string): void {
    const { log, label } = this.options;
    log.info(
      `${label} TLS ${what} ${describeCertificate(this.material.leaf)}${this.options.files.mutual ? '; client certificates required' : ''}`,
    );
    const warning = validityWarning(this.material.leaf);
    if (warning) log.warn(`${label} TLS: ${warning}`);
  }
}

/** A connection that has sent nothing after this long is closed before the TLS handshake starts. */
export const FIRST_BYTE_TIMEOUT_MS = 30_000;

/**
 * Lets a TLS server answer clients that speak clear text to it (a client without TLS configured) with a
 * useful error instead of a bare failed handshake: each new connection's first byte is looked at, a TLS
 * handshake record (0x16) goes on to the TLS server as usual, and anything else is given to `onClearText`
 * with the byte still unread. Open connections are unaffected.
 */
export function divertClearText(server: Server, onClearText: (socket: Socket) => void): void {
  // tls.Server wraps each accepted socket in its 'connection' listener; run it after the first byte.
  const tlsListeners = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const drop = (): void => {
      socket.destroy();
    };
    socket.on('error', drop);
    socket.setTimeout(FIRST_BYTE_TIMEOUT_MS, drop);
    // Closed before saying anything.
    socket.once('end', drop);
    const onReadable = (): void => {
      const first = socket.read(1) as Buffer | null;
      if (first === null) {
        if (!socket.destroyed) socket.once('readable', onReadable);
        return;
      }
      // Put the byte back: the TLS layer (or the clear-text answer) reads the stream from its start.
      socket.unshift(first);
      socket.off('error', drop);
      socket.off('end', drop);
      socket.setTimeout(0);
      if (first[0] === 0x16) for (const listener of tlsListeners) listener.call(server, socket);
      else onClearText(socket);
    };
    socket.once('readable', onReadable);
  });
}

function fingerprintOf(parts: {
  cert: Buffer | Error;
  key: Buffer | Error;
  ca: Buffer | Error | undefined;
}): string {
  const hash = createHash('sha256');
  for (const part of [parts.cert, parts.key, parts.ca]) {
    if (part === undefined) hash.update('-');
    else if (part instanceof Error) hash.update(`error:${part.message}`);
    else hash.update(`${part.length}:`).update(part);
    hash.update('\0');
  }
  return hash.digest('hex');
}
