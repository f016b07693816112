/**
 * A mysql:// connection string (MySQL and MariaDB), parsed by us: mysql2 would otherwise take
 * every query parameter as a client option, and some make the server read local files or talk
 * to a local socket (`socketPath`, `localInfile`/`infileStreamFactory`, `flags=LOCAL_FILES`,
 * certificate paths). Only the parameters understood here are accepted; the rest is a 400.
 */
import { z } from 'zod';

export interface MysqlTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  /** The default database; table names without one are looked up here. */
  database?: string;
  /** false, or TLS with the certificate verified unless ssl=no-verify. */
  ssl: false | { rejectUnauthorized: boolean };
}

const FILE_PARAMS = new Set(['socketpath', 'localinfile', 'infilestreamfactory', 'flags', 'sslca', 'ssl-ca', 'sslcert', 'ssl-cert', 'sslkey', 'ssl-key', 'ssl_ca', 'ssl_cert', 'ssl_key', 'sslcrl', 'ssl-crl', 'ssl-capath', 'sslcapath']);
const SSL_VALUES: Record<string, MysqlTarget['ssl']> = {
  false: false,
  disabled: false,
  true: { rejectUnauthorized: true },
  required: { rejectUnauthorized: true },
  verify: { rejectUnauthorized: true },
  'no-verify': { rejectUnauthorized: false },
};

export class MysqlConnectionStringError extends Error {}

export function parseMysqlConnectionString(text: string): MysqlTarget {
  if (!/^(mysql|mariadb):\/\//i.test(text)) throw new MysqlConnectionStringError('config.connection_string must start with mysql:// (mysql://user:password@host:3306/database)');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new MysqlConnectionStringError('config.connection_string is not a valid URL: mysql://user:password@host:3306/database');
  }
  let ssl: MysqlTarget['ssl'] = false;
  for (const [k, v] of url.searchParams) {
    const key = k.toLowerCase();
    if (FILE_PARAMS.has(key)) {
      throw new MysqlConnectionStringError(`config.connection_string: the parameter ${k} is refused (it makes the server read a local file or socket)`);
    }
    if (key !== 'ssl') throw new MysqlConnectionStringError(`config.connection_string: unsupported parameter ${JSON.stringify(k)} (accepted: ssl=true|false|no-verify)`);
    const mode = SSL_VALUES[v.toLowerCase()];
    if (mode === undefined) throw new MysqlConnectionStringError('config.connection_string: ssl must be true, false or no-verify');
    ssl = mode;
  }
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      throw new MysqlConnectionStringError('config.connection_string has a malformed %-escape');
    }
  };
  const host = decode(url.hostname).replace(/^\[|\]$/g, '');
  if (!host) throw new MysqlConnectionStringError('config.connection_string needs a host: mysql://user:password@host:3306/database');
  const port = url.port ? Number(url.port) : 3306;
  const user = decode(url.username);
  if (!user) throw new MysqlConnectionStringError('config.connection_string needs a user name: mysql://user:password@host:3306/database');
  const database = decode(url.pathname.replace(/^\//, '')) || undefined;
  if (database?.includes('/')) throw new MysqlConnectionStringError('config.connection_string: the path must be just the database name');
  return { host, port, user, password: decode(url.password), database, ssl };
}

export const mysqlConfigSchema = z
  .object({
    connection_string: z
      .string({ error: 'config.connection_string is required: mysql://user:password@host:3306/database' })
      .superRefine((s, ctx) => {
        try {
          parseMysqlConnectionString(s);
        } catch (err) {
          if (!(err instanceof MysqlConnectionStringError)) throw err;
          ctx.addIssue({ code: 'custom', message: err.message });
        }
      }),
  })
  .strict();

export type MysqlSourceConfig = z.infer<typeof mysqlConfigSchema>;
