/**
 * A Databricks source's config (as a user sends it in `POST …/warehouse-sources`), validated into
 * what the connector uses. The connector speaks the SQL Statement Execution API, which runs on SQL
 * warehouses only: `http_path` must name one (`/sql/1.0/warehouses/<id>`, as the warehouse's
 * "Connection details" tab shows it); a cluster's path is refused here with that reason.
 */
import { z } from 'zod';

/** Fields of the config that are credentials: encrypted at rest, never returned or logged. */
export const DATABRICKS_SECRET_FIELDS = ['token'] as const;

// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

const WAREHOUSE_PATH = /^\/?sql\/1\.0\/(?:warehouses|endpoints)\/([A-Za-z0-9]+)\/?$/;
const HOST_RE = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:\d{1,5})?$/;
// Unity Catalog names: anything but control characters, dots, slashes and backticks keeps quoting simple.
const objectName = (field: string) =>
  z
    .string()
    .trim()
    .min(1, `${field} must not be empty`)
    .max(255, `${field} is too long`)
    .refine((s) => ![...s].some((ch) => ch.charCodeAt(0) < 0x20 || ch === '`' || ch === '.' || ch === '/'), `${field} must be a plain catalog or schema name`);

function httpUrl(raw: string): URL | undefined {
  try {
    const u = new URL(raw);
    return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password && (u.pathname === '/' || u.pathname === '') && !u.search ? u : undefined;
  } catch {
    return undefined;
  }
}

/** Accepts what users paste: `dbc-1234.cloud.databricks.com` or `https://dbc-1234.cloud.databricks.com/`. */
export function normaliseHost(raw: string): string {
  return raw
    .trim()
    .replace(/^https:\/\//i, '')
    .replace(/\/+$/, '');
}

/** The `config` of a databricks source, as the API validates and stores it. */
export const databricksConfigSchema = z
  .object({
    host: z
      .string({ error: 'host is required: the workspace host name, e.g. "dbc-a1b2c3d4-e5f6.cloud.databricks.com"' })
      .transform(normaliseHost)
      .refine((s) => HOST_RE.test(s) && s.length <= 255, 'host must be a workspace host name such as "dbc-a1b2c3d4-e5f6.cloud.databricks.com"'),
    http_path: z
      .string({ error: 'http_path is required: the SQL warehouse\'s HTTP path, e.g. "/sql/1.0/warehouses/abc123"' })
      .trim()
      .refine(
        (s) => WAREHOUSE_PATH.test(s),
        'http_path must name a SQL warehouse ("/sql/1.0/warehouses/<id>", from the warehouse\'s Connection details): the connector runs statements through the SQL Statement Execution API, which serves SQL warehouses, not clusters',
      ),
    token: z
      .string({ error: 'token is required: a personal access token (or a service principal\'s OAuth token)' })
      .min(1, 'token must not be empty')
      // It travels in an HTTP header, where fetch refuses a control character with a message quoting the header: the token.
      .refine((s) => !CONTROL_CHARACTER.test(s), 'token must not contain a control character (a line break, tab or NUL): paste the token alone'),
    catalog: objectName('catalog').optional(),
    schema: objectName('schema').optional(),
    api_endpoint: z
      .string()
      .trim()
      .refine((s) => httpUrl(s) !== undefined, 'api_endpoint must be an http(s) origin such as "https://dbc-1234.cloud.databricks.com"')
      .optional(),
  })
  .strict();

export type DatabricksSourceConfig = z.output<typeof databricksConfigSchema>;

export function warehouseId(httpPath: string): string {
  return WAREHOUSE_PATH.exec(httpPath.trim())![1]!;
}

/** Where the REST API lives: `api_endpoint` when set (a private link or a test stand-in), else https://host. */
export function baseUrl(config: Pick<DatabricksSourceConfig, 'host' | 'api_endpoint'>): URL {
  return new URL(config.api_endpoint ?? `https://${config.host}`);
}
