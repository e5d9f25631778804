/**
 * Certificates for the TLS tests, made with openssl by test/fixtures/make-test-certs.sh (the same script the
 * Python compatibility tests use) into a fresh temporary folder: a CA, server certificates for localhost
 * (a second one for rotations, an expired one, one for another host), client certificates from the CA and
 * from an unrelated CA. Nothing secret is committed.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../../test/fixtures/make-test-certs.sh', import.meta.url));

export interface TestCertificates {
  readonly dir: string;
  /** `<dir>/<name>`, e.g. file('server.crt'). */
  file(name: string): string;
  read(name: string): Buffer;
  /** Copies `from` over `to` inside the folder (a certificate rotation). */
  copy(from: string, to: string): void;
  remove(): void;
}

export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-certs-'));
  execFileSync('bash', [SCRIPT, dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  const file = (name: string): string => path.join(dir, name);
  return {
    dir,
    file,
    read: (name) => readFileSync(file(name)),
    copy: (from, to) => copyFileSync(file(from), file(to)),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
