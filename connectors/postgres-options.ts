/**
 * A postgres:// (or redshift) connection string, parsed by us rather than by pg: pg's parser
 * reads `sslcert`/`sslkey`/`sslrootcert` FILES of this server as it parses, and pg itself fills
 * anything left out from the service's own PG* environment (PGPASSWORD, PGHOST, PGSSLMODE) and
 * ~/.pgpass — a tenant's connection must never carry the service's credentials or read its
 * files. Every parameter is either understood here or refused with a 400 at create time.
 */
import type tls from 'node:tls';

export interface PostgresTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** false, or TLS options (certificate verified unless sslmode=no-verify). */
  ssl: false | tls.ConnectionOptions;
  /** libpq `options` (e.g. `-c search_path=…`): server-side settings only. */
  options?: string;
}

/** Parameters that make a client read a local file (or a local service definition). */
const FILE_PARAMS = new Set(['sslcert', 'sslkey', 'sslrootcert', 'sslcrl', 'sslcrldir', 'passfile', 'service', 'servicefile', 'sslpassword', 'krbsrvname', 'gsslib']);
const ACCEPTED = new Set(['sslmode', 'ssl', 'options', 'application_name', 'fallback_application_name', 'connect_timeout', 'host', 'port', 'user', 'password', 'dbname']);
const SSL_MODES = new Set(['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify']);

export class ConnectionStringError extends Error {}

/** Parses and checks a connection string; throws ConnectionStringError with a message for the user (never the password). */
export function parsePostgresConnectionString(text: string, defaultPort = 5432): PostgresTarget {
  if (!/^postgres(ql)?:\/\//i.test(text)) throw new ConnectionStringError('config.connection_string must start with postgres:// or postgresql://');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConnectionStringError('config.connection_string is not a valid URL: postgres://user:password@host:5432/database');
  }
  const params = new Map<string, string>();
  for (const [k, v] of url.searchParams) {
    const key = k.toLowerCase();
    if (FILE_PARAMS.has(key)) {
      throw new ConnectionStringError(`config.connection_string: the parameter ${key} is refused (it makes the server read a local file); give certificates and passwords inline instead`);
    }
    if (!ACCEPTED.has(key)) throw new ConnectionStringError(`config.connection_string: unsupported parameter ${JSON.stringify(k)} (accepted: ${[...ACCEPTED].join(', ')})`);
    params.set(key, v);
  }
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      throw new ConnectionStringError('config.connection_string has a malformed %-escape');
    }
  };
  const host = params.get('host') ?? decode(url.hostname).replace(/^\[|\]$/g, '');
  if (!host) throw new ConnectionStringError('config.connection_string needs a host: postgres://user:password@host:5432/database');
  const portText = params.get('port') ?? url.port;
  const port = portText ? Number(portText) : defaultPort;
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new ConnectionStringError('config.connection_string has an invalid port');
  const user = params.get('user') ?? decode(url.username);
  if (!user) throw new ConnectionStringError('config.connection_string needs a user name: postgres://user:password@host:5432/database');
  const password = params.get('password') ?? decode(url.password);
  const database = params.get('dbname') ?? decode(url.pathname.replace(/^\//, '')) ?? '';
  const mode = (params.get('sslmode') ?? (params.get('ssl') === 'true' || params.get('ssl') === '1' ? 'require' : 'disable')).toLowerCase();
  if (!SSL_MODES.has(mode)) throw new ConnectionStringError(`config.connection_string: sslmode must be one of ${[...SSL_MODES].join(', ')}`);
  const ssl: PostgresTarget['ssl'] =
    mode === 'disable' || mode === 'allow' ? false : mode === 'no-verify' ? { rejectUnauthorized: false } : { rejectUnauthorized: true };
  return { host, port, user, password, database: database || user, ssl, options: params.get('options') };
}

/** The problem with a connection string (for a zod refinement), or undefined. */
export function connectionStringProblem(text: string, defaultPort?: number): string | undefined {
  try {
    parsePostgresConnectionString(text, defaultPort);
    return undefined;
  } catch (err) {
    if (err instanceof ConnectionStringError) return err.message;
    throw err;
  }
}
