/** A throwaway self-signed certificate for 127.0.0.1/localhost, made with the machine's openssl. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCert {
  dir: string;
  certFile: string;
  keyFile: string;
  cert: string;
  remove: () => void;
}

export function makeSelfSignedCert(): TestCert {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'analytics-tls-'));
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '2',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
    { stdio: 'ignore' },
  );
  return { dir, certFile, keyFile, cert: fs.readFileSync(certFile, 'utf8'), remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}
