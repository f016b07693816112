/**
 * Resolves HTTP Basic credentials to a principal. scrypt is deliberately slow, so a verified
 * (username, secret) pair is remembered for a short while under a sha256 of both — never the
 * secret itself — which keeps /import fast under load without weakening storage at rest.
 */
import { findProjectBySecretHash, findServiceAccount, type Project, type ServiceAccount } from '../db/accounts.repo.js';
import type { DbOrTrx } from '../db/knex.js';
import { hashSecret, randomToken, sha256Hex, verifySecret } from '../lib/secrets.js';

export type Principal =
  | { kind: 'service_account'; account: ServiceAccount }
  | { kind: 'project_secret'; project: Project };

export interface BasicCredentials {
  username: string;
  password: string;
}

export function parseBasicAuth(header: string | undefined): BasicCredentials | undefined {
  if (!header) return undefined;
  const m = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return { username: decoded, password: '' };
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

const CACHE_TTL_MS = 60_000;
const CACHE_MAX = 10_000;

/**
 * A hash no secret matches. An unknown username is checked against it, so it costs the same
 * scrypt time as a wrong secret: response time does not tell which usernames exist.
 */
let dummyHash: Promise<string> | undefined;
function dummySecretHash(): Promise<string> {
  dummyHash ??= hashSecret(randomToken(32));
  return dummyHash;
}

export class Authenticator {
  private readonly verified = new Map<string, { accountId: number; expires: number }>();

  constructor(private readonly db: DbOrTrx) {}

  async authenticate(creds: BasicCredentials | undefined): Promise<Principal | undefined> {
    if (!creds || !creds.username) return undefined;
    if (creds.password === '') {
      const project = await findProjectBySecretHash(this.db, sha256Hex(creds.username));
      return project ? { kind: 'project_secret', project } : undefined;
    }
    const account = await findServiceAccount(this.db, creds.username);
    if (!account) {
      await verifySecret(creds.password, await dummySecretHash());
      return undefined;
    }
    const cacheKey = sha256Hex(`${creds.username}\u0000${creds.password}\u0000${account.secretHash}`);
    const hit = this.verified.get(cacheKey);
    if (hit && hit.expires > Date.now() && hit.accountId === account.id) return { kind: 'service_account', account };
    if (!(await verifySecret(creds.password, account.secretHash))) return undefined;
    if (this.verified.size >= CACHE_MAX) this.verified.clear();
    this.verified.set(cacheKey, { accountId: account.id, expires: Date.now() + CACHE_TTL_MS });
    return { kind: 'service_account', account };
  }
}
