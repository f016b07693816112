/**
 * A Snowflake source's config (as a user sends it in `POST …/warehouse-sources`), validated into
 * the connection options the driver gets. Pure apart from parsing the private key with node:crypto,
 * so a wrong passphrase is a 400 at create time rather than a failed run later.
 */
import { stripEnd } from '../../src/lib/strip-end.js';
import crypto from 'node:crypto';
import { z } from 'zod';

/** Fields of the config that are credentials: encrypted at rest, never returned or logged. */
export const SNOWFLAKE_SECRET_FIELDS = ['password', 'private_key', 'private_key_passphrase'] as const;

/** The operator's side of the decision: which `access_url` origins a source may use. */
export interface SnowflakeServerSettings {
  /** Normalised origins (`scheme://host[:port]`) from SNOWFLAKE_ALLOWED_ACCESS_URLS. */
  allowedAccessUrls: readonly string[];
  /** Give up on a login after this many milliseconds. */
  connectTimeoutMs: number;
}

/** Parses SNOWFLAKE_ALLOWED_ACCESS_URLS (comma-separated) into normalised origins. */
export function snowflakeServerSettings(config: { SNOWFLAKE_ALLOWED_ACCESS_URLS: string; SNOWFLAKE_CONNECT_TIMEOUT_MS: number }): SnowflakeServerSettings {
  const allowed = config.SNOWFLAKE_ALLOWED_ACCESS_URLS.split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => originOf(s) ?? s);
  return { allowedAccessUrls: allowed, connectTimeoutMs: config.SNOWFLAKE_CONNECT_TIMEOUT_MS };
}

function originOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return undefined;
    if (u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== '')) return undefined;
    return u.origin;
  } catch {
    return undefined;
  }
}

// The driver's own rule for an account identifier (a DNS label chain); it becomes the host name
// `<account>.snowflakecomputing.com`, so nothing else may get through.
const ACCOUNT_RE = /^\w+([.-]\w+)*$/;
// Warehouse, database, schema, role: sent as login parameters. Plain or quoted Snowflake names;
// control characters and quotes-in-names are refused to keep error messages and logs sane.
const objectName = (field: string) =>
  z
    .string()
    .trim()
    .min(1, `${field} must not be empty`)
    .max(255, `${field} is too long`)
    .refine((s) => ![...s].some((ch) => ch === '"' || ch.charCodeAt(0) < 0x20), `${field} must be a plain Snowflake object name`);

/** Accepts what users paste: `xy12345.eu-west-1`, `myorg-acct`, or a full `https://….snowflakecomputing.com` URL. */
export function normaliseAccount(raw: string): string {
  return stripEnd(raw.trim().replace(/^https?:\/\//i, ''), (ch) => ch === '/').replace(/\.snowflakecomputing\.(com|cn)$/i, '');
}

/** The `config` of a snowflake source, as the API validates and stores it. */
export const snowflakeConfigSchema = z
  .object({
    account: z
      .string({ error: 'account is required: the account identifier, e.g. "myorg-myaccount" or "xy12345.eu-west-1"' })
      .max(1000, 'account is too long')
      .transform(normaliseAccount)
      .refine((s) => ACCOUNT_RE.test(s) && s.length <= 255, 'account must be a Snowflake account identifier such as "myorg-myaccount" or "xy12345.eu-west-1"'),
    username: z.string({ error: 'username is required' }).trim().min(1, 'username must not be empty').max(255),
    password: z.string().min(1, 'password must not be empty').optional(),
    private_key: z.string().min(1, 'private_key must not be empty').optional(),
    private_key_passphrase: z.string().min(1, 'private_key_passphrase must not be empty').optional(),
    warehouse: objectName('warehouse').optional(),
    database: objectName('database').optional(),
    schema: objectName('schema').optional(),
    role: objectName('role').optional(),
    access_url: z.string().optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    const issue = (field: string, message: string) => ctx.addIssue({ code: 'custom', path: [field], message });
    if (c.password !== undefined && c.private_key !== undefined) issue('password', 'give either password or private_key, not both');
    else if (c.password === undefined && c.private_key === undefined) issue('password', 'password or private_key (key-pair authentication) is required');
    if (c.private_key_passphrase !== undefined && c.private_key === undefined) issue('private_key_passphrase', 'private_key_passphrase needs private_key');
    if (c.private_key !== undefined) {
      const problem = privateKeyProblem(c.private_key, c.private_key_passphrase);
      if (problem) issue('private_key', problem);
    }
    if (c.access_url !== undefined && !originOf(c.access_url.trim())) {
      issue('access_url', 'access_url must be an http(s) origin such as https://host:443, without path or credentials');
    }
  });

export type SnowflakeSourceConfig = z.infer<typeof snowflakeConfigSchema>;

/** What the connector needs to open a session: validated, credentials included. */
export interface SnowflakeConnectOptions {
  account: string;
  username: string;
  auth: { kind: 'password'; password: string } | { kind: 'key_pair'; privateKey: string; passphrase?: string };
  warehouse?: string;
  database?: string;
  schema?: string;
  role?: string;
  /** Set only when allowed by the operator; otherwise the driver derives the host from `account`. */
  accessUrl?: string;
}

/**
 * The operator's check: an `access_url` must be one of SNOWFLAKE_ALLOWED_ACCESS_URLS. Returns the
 * message for a 400, or undefined. Checked at create time and again before every connection.
 */
export function accessUrlProblem(config: Pick<SnowflakeSourceConfig, 'access_url'>, allowed: readonly string[]): string | undefined {
  if (config.access_url === undefined) return undefined;
  const origin = originOf(config.access_url.trim());
  if (origin && allowed.includes(origin)) return undefined;
  return 'config.access_url is not allowed on this server (the operator lists permitted origins in SNOWFLAKE_ALLOWED_ACCESS_URLS); leave it out to connect to <account>.snowflakecomputing.com';
}

/** A stored config as connection options (the config was validated by the schema when it was stored). */
export function toConnectOptions(c: SnowflakeSourceConfig): SnowflakeConnectOptions {
  return {
    account: c.account,
    username: c.username,
    auth:
      c.private_key !== undefined
        ? { kind: 'key_pair', privateKey: c.private_key, passphrase: c.private_key_passphrase }
        : { kind: 'password', password: c.password ?? '' },
    warehouse: c.warehouse,
    database: c.database,
    schema: c.schema,
    role: c.role,
    accessUrl: c.access_url === undefined ? undefined : originOf(c.access_url.trim()),
  };
}

export class SnowflakeConfigError extends Error {
  constructor(
    message: string,
    readonly issues: { field: string; message: string }[],
  ) {
    super(message);
    this.name = 'SnowflakeConfigError';
  }
}

/** Schema, then the operator's access_url check: connection options, or SnowflakeConfigError naming each problem (never a value). */
export function parseSnowflakeConfig(raw: unknown, settings: Pick<SnowflakeServerSettings, 'allowedAccessUrls'>): SnowflakeConnectOptions {
  const parsed = snowflakeConfigSchema.safeParse(raw);
  const issues = parsed.success
    ? []
    : parsed.error.issues.map((i) => ({
        field: i.path.join('.') || 'config',
        message: i.code === 'unrecognized_keys' ? `unknown field(s): ${i.keys.join(', ')}` : i.message,
      }));
  if (parsed.success) {
    const refused = accessUrlProblem(parsed.data, settings.allowedAccessUrls);
    if (refused) issues.push({ field: 'access_url', message: refused });
  }
  if (!parsed.success || issues.length > 0) {
    throw new SnowflakeConfigError(`invalid snowflake config: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`, issues);
  }
  return toConnectOptions(parsed.data);
}

/** Why a PEM private key cannot be used (the message names no key material), or undefined. */
function privateKeyProblem(pem: string, passphrase: string | undefined): string | undefined {
  if (!/-----BEGIN (ENCRYPTED |RSA )?PRIVATE KEY-----/.test(pem)) {
    return 'private_key must be a PEM private key (-----BEGIN PRIVATE KEY----- or -----BEGIN ENCRYPTED PRIVATE KEY-----)';
  }
  try {
    const key = crypto.createPrivateKey({ key: pem, format: 'pem', passphrase });
    if (key.asymmetricKeyType !== 'rsa') return 'private_key must be an RSA key (Snowflake key-pair authentication uses RS256)';
    return undefined;
  } catch {
    return passphrase === undefined && /ENCRYPTED/.test(pem)
      ? 'private_key is encrypted: give private_key_passphrase'
      : 'private_key could not be read (wrong private_key_passphrase, or not a valid PEM key)';
  }
}
