/**
 * A BigQuery source's config (as a user sends it in `POST …/warehouse-sources`), validated into
 * what the client gets. The service-account key is checked here — its fields, and that its
 * private key parses — so a pasted OAuth client secret or a truncated key is a 400 at create time
 * rather than a failed run later. Pure apart from parsing the key with node:crypto.
 */
import crypto from 'node:crypto';
import { z } from 'zod';

/** Fields of the config that are credentials: encrypted at rest, never returned or logged. */
export const BIGQUERY_SECRET_FIELDS = ['credentials_json'] as const;

/** Google's token endpoint: what real keys name as `token_uri`, and the JWT audience the client signs. */
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

/** The parts of a service-account key the client uses. */
export interface ServiceAccountKey {
  type: 'service_account';
  client_email: string;
  private_key: string;
  private_key_id?: string;
  token_uri: string;
}

// BigQuery's own rules: project ids are 6-30 chars (older ones may contain a domain prefix
// `example.com:proj`); dataset ids letters, digits and underscores, up to 1024.
const PROJECT_RE = /^(?:[a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$/;
const DATASET_RE = /^\w{1,1024}$/;
const LOCATION_RE = /^[A-Za-z][A-Za-z0-9-]{1,40}$/;

function httpUrl(raw: string): URL | undefined {
  try {
    const u = new URL(raw);
    return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password ? u : undefined;
  } catch {
    return undefined;
  }
}

const NOT_A_KEY =
  'credentials_json must be a service-account key JSON (IAM → Service accounts → Keys → Add key → JSON): an object with "type": "service_account", "client_email" and "private_key"';

/** Parses and checks a key given as a JSON string or an object; returns a message when it is not a usable key. */
export function parseServiceAccountKey(raw: unknown): { key: ServiceAccountKey } | { problem: string } {
  let obj: unknown = raw;
  if (typeof raw === 'string') {
    try {
      obj = JSON.parse(raw);
    } catch {
      return { problem: `${NOT_A_KEY}; the text given is not JSON` };
    }
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return { problem: NOT_A_KEY };
  const o = obj as Record<string, unknown>;
  if (o.type !== 'service_account') {
    const what = typeof o.type === 'string' ? `"type" is ${JSON.stringify(o.type)}` : 'it has no "type"';
    const hint = o.installed || o.web ? ' (this looks like an OAuth client secret, not a service-account key)' : '';
    return { problem: `${NOT_A_KEY}; ${what}${hint}` };
  }
  if (typeof o.client_email !== 'string' || !o.client_email.includes('@')) return { problem: `${NOT_A_KEY}; "client_email" is missing` };
  if (typeof o.private_key !== 'string' || o.private_key.length === 0) return { problem: `${NOT_A_KEY}; "private_key" is missing` };
  try {
    const k = crypto.createPrivateKey(o.private_key);
    if (k.asymmetricKeyType !== 'rsa') return { problem: 'credentials_json: "private_key" must be an RSA key (as Google issues them)' };
  } catch {
    return { problem: 'credentials_json: "private_key" is not a readable PEM private key (was the key truncated or its newlines lost?)' };
  }
  const tokenUri = o.token_uri === undefined ? GOOGLE_TOKEN_URL : o.token_uri;
  if (typeof tokenUri !== 'string' || !httpUrl(tokenUri)) return { problem: 'credentials_json: "token_uri" must be an http(s) URL' };
  return {
    key: {
      type: 'service_account',
      client_email: o.client_email,
      private_key: o.private_key,
      private_key_id: typeof o.private_key_id === 'string' ? o.private_key_id : undefined,
      token_uri: tokenUri,
    },
  };
}

/** The `config` of a bigquery source, as the API validates and stores it. */
export const bigqueryConfigSchema = z
  .object({
    project_id: z
      .string({ error: 'project_id is required: the Google Cloud project that runs the queries (and holds the dataset unless a table names another)' })
      .trim()
      .refine((s) => PROJECT_RE.test(s), 'project_id must be a Google Cloud project id such as "my-project-123"'),
    dataset: z
      .string({ error: 'dataset is required: the dataset that unqualified table names refer to' })
      .trim()
      .refine((s) => DATASET_RE.test(s), 'dataset must be a BigQuery dataset id (letters, digits, underscores)'),
    location: z
      .string()
      .trim()
      .refine((s) => LOCATION_RE.test(s), 'location must be a BigQuery location such as "US", "EU" or "europe-west1"')
      .optional(),
    credentials_json: z.unknown().superRefine((v, ctx) => {
      if (v === undefined) {
        ctx.addIssue({ code: 'custom', message: 'credentials_json is required: a service-account key JSON' });
        return;
      }
      const parsed = parseServiceAccountKey(v);
      if ('problem' in parsed) ctx.addIssue({ code: 'custom', message: parsed.problem });
    }),
    api_endpoint: z
      .string()
      .trim()
      .refine((s) => httpUrl(s) !== undefined, 'api_endpoint must be an http(s) URL such as "https://bigquery.googleapis.com"')
      .optional(),
  })
  .strict()
  // Stored as the key object whatever form it came in (a JSON string or an object).
  .transform((c) => ({ ...c, credentials_json: (parseServiceAccountKey(c.credentials_json) as { key: ServiceAccountKey }).key }));

export type BigQuerySourceConfig = z.output<typeof bigqueryConfigSchema>;
