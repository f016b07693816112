/**
 * Google's OAuth token endpoint as the stand-in serves it (the key's `token_uri`): the JWT-bearer
 * grant google-auth-library sends. The assertion is checked as Google checks it — RS256 signature
 * with the service account's public key, `iss` a known account, `aud` the token URL, a scope,
 * `iat`/`exp` within an hour and not expired — and refused in Google's words
 * (`{"error":"invalid_grant","error_description":…}`, HTTP 400).
 */
import crypto from 'node:crypto';

export interface ServiceAccount {
  email: string;
  publicKeyPem: string;
  /** roles/bigquery.jobUser on the project: may run queries. Default true. */
  jobUser?: boolean;
  /** roles/bigquery.dataViewer on the dataset: may read its tables. Default true. */
  dataViewer?: boolean;
}

export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

export interface IssuedToken {
  account: ServiceAccount;
  scopes: string[];
  expiresAt: number;
}

type Grant = { ok: true; token: string; issued: IssuedToken } | { ok: false; error: string; description: string };

const b64json = (part: string): Record<string, unknown> | undefined => {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
};

export function exchangeAssertion(form: URLSearchParams, accounts: ServiceAccount[], ownTokenUri: string, now = Date.now()): Grant {
  const refuse = (error: string, description: string): Grant => ({ ok: false, error, description });
  if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return refuse('unsupported_grant_type', 'Invalid grant_type: ' + String(form.get('grant_type')));
  const assertion = form.get('assertion') ?? '';
  const parts = assertion.split('.');
  if (parts.length !== 3) return refuse('invalid_request', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
  const header = b64json(parts[0]!);
  const claims = b64json(parts[1]!);
  if (!header || !claims) return refuse('invalid_request', 'Invalid JWT: could not decode.');
  if (header.alg !== 'RS256') return refuse('invalid_grant', 'Invalid JWT Signature.');
  const account = accounts.find((a) => a.email === claims.iss);
  if (!account) return refuse('invalid_grant', 'Invalid grant: account not found');
  const signed = crypto.verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), account.publicKeyPem, Buffer.from(parts[2]!, 'base64url'));
  if (!signed) return refuse('invalid_grant', 'Invalid JWT Signature.');
  if (claims.aud !== GOOGLE_TOKEN_URL && claims.aud !== ownTokenUri) return refuse('invalid_grant', 'Invalid JWT: Failed audience check.');
  const iat = Number(claims.iat);
  const exp = Number(claims.exp);
  const nowS = Math.floor(now / 1000);
  if (!Number.isFinite(iat) || !Number.isFinite(exp) || exp <= nowS || iat > nowS + 300 || exp - iat > 3600) {
    return refuse('invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
  }
  const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [];
  if (scopes.length === 0) return refuse('invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
  const token = `ya29.standin-${crypto.randomBytes(24).toString('base64url')}`;
  return { ok: true, token, issued: { account, scopes, expiresAt: now + 3600_000 } };
}
