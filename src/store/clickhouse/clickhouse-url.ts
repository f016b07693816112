/**
 * `EVENT_STORE_URL=clickhouse://user:password@host:8123/database` → what @clickhouse/client needs.
 * `clickhouses://` speaks HTTPS. The database defaults to `default`. Pure.
 */

export interface ClickHouseTarget {
  /** `http(s)://host:port` — the HTTP interface, without credentials. */
  url: string;
  username: string;
  password: string;
  database: string;
}

export function isClickHouseUrl(value: string): boolean {
  return /^clickhouses?:\/\//i.test(value);
}

export function parseClickHouseUrl(value: string): ClickHouseTarget {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new Error('EVENT_STORE_URL is not a URL (expected clickhouse://user:password@host:8123/database)');
  }
  const scheme = u.protocol.toLowerCase();
  if (scheme !== 'clickhouse:' && scheme !== 'clickhouses:') throw new Error(`EVENT_STORE_URL scheme ${scheme} is not clickhouse:// or clickhouses://`);
  if (!u.hostname) throw new Error('EVENT_STORE_URL has no host');
  const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || 'default';
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(database)) throw new Error(`EVENT_STORE_URL database name '${database}' must be letters, digits and _`);
  const https = scheme === 'clickhouses:';
  const port = u.port || (https ? '8443' : '8123');
  return {
    url: `${https ? 'https' : 'http'}://${u.hostname}:${port}`,
    username: decodeURIComponent(u.username) || 'default',
    password: decodeURIComponent(u.password),
    database,
  };
}

/** The same URL pointing at another database (tests, the move command). */
export function withDatabase(value: string, database: string): string {
  const u = new URL(value);
  u.pathname = `/${database}`;
  return u.toString();
}
