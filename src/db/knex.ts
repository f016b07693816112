/**
 * The knex factory. SQLite (embedded default) and PostgreSQL (production) differ here and in the
 * repositories only: WAL and one writer for SQLite, a pool for Postgres.
 */
import { parseDatabaseUrl } from '../domain/database-url.js';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { SQLITE_CACHE_MB_DEFAULT, type Config } from '../../config/index.js';
import type { Logger } from '../lib/logger.js';

export type Db = Knex;
export type DbOrTrx = Knex | Knex.Transaction;
export type Dialect = 'sqlite' | 'postgres';

/** The dialect of a database URL (src/domain/database-url.ts); an unsupported scheme throws (`cli events move` reaches here without config). */
export function dialectOf(url: string): Dialect {
  return parsedUrl(url).dialect;
}

function parsedUrl(url: string): { dialect: Dialect; url: string } {
  const parsed = parseDatabaseUrl(url);
  if ('unsupported' in parsed) {
    throw new Error(`unsupported database URL scheme '${parsed.unsupported}://': use postgres://…, sqlite://… or a SQLite file path`);
  }
  return parsed;
}

export function sqliteFileOf(url: string): string {
  return url.replace(/^sqlite:(\/\/)?/, '');
}

export interface DbOptions {
  /** Postgres only: the schema to use (tests get a fresh one per file). */
  schema?: string;
  poolMax?: number;
  /** Where knex's own warnings go (a connection lost, a refused connect): the process's log, as JSON lines; console otherwise. */
  log?: Logger;
}

/** knex's logger hooks onto ours, so an outage's "Connection Error" lines are structured like the rest. */
function knexLog(log: Logger | undefined): Knex.Config['log'] {
  if (!log) return undefined;
  const text = (message: unknown) => (message instanceof Error ? message.message : String(message));
  return {
    warn: (m: unknown) => log.warn({ detail: text(m) }, 'database client warning'),
    error: (m: unknown) => log.error({ detail: text(m) }, 'database client error'),
    deprecate: (m: unknown) => log.warn({ detail: text(m) }, 'database client deprecation'),
    debug: (m: unknown) => log.debug({ detail: text(m) }, 'database client debug'),
  };
}

export function createDb(config: Pick<Config, 'DATABASE_URL'> & Partial<Pick<Config, 'SQLITE_CACHE_MB'>>, options: DbOptions = {}): Db {
  const { dialect: kind, url } = parsedUrl(config.DATABASE_URL);
  if (kind === 'postgres') {
    return knexFactory({
      client: 'pg',
      connection: url,
      searchPath: options.schema ? [options.schema] : undefined,
      pool: { min: 0, max: options.poolMax ?? 10 },
      log: knexLog(options.log),
    });
  }
  const file = sqliteFileOf(url);
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  return knexFactory({
    client: ImmediateSqliteClient,
    connection: { filename: file },
    useNullAsDefault: true,
    log: knexLog(options.log),
    // One connection: SQLite has one writer, and a single connection makes every write path
    // serialise cleanly instead of failing with SQLITE_BUSY.
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: { pragma: (s: string) => unknown }, done: (err: Error | null, conn: unknown) => void) => {
        conn.pragma('journal_mode = WAL');
        conn.pragma('synchronous = NORMAL');
        // Checkpoint every ~40 MB of WAL instead of SQLite's default ~4 MB: a bulk import rewrites
        // the same index pages many times, and a larger window copies each once — about twice
        // the insert throughput in bench/ingest.bench.ts.
        conn.pragma('wal_autocheckpoint = 10000');
        // Negative: a size in KiB rather than pages.
        conn.pragma(`cache_size = -${(config.SQLITE_CACHE_MB ?? SQLITE_CACHE_MB_DEFAULT) * 1024}`);
        conn.pragma('busy_timeout = 5000');
        conn.pragma('foreign_keys = ON');
        done(null, conn);
      },
    },
  });
}

// knex's own client, to change how it opens a transaction (knex has no option for it).
const BetterSqliteClient = createRequire(import.meta.url)('knex/lib/dialects/better-sqlite3/index.js') as typeof knexFactory.Client;

/**
 * SQLite transactions open with BEGIN IMMEDIATE: they take the write lock up front, waiting up to
 * busy_timeout for it. knex's plain BEGIN is deferred, and a transaction that reads before it
 * writes (a mirror batch reads its snapshot first, a partition locks its run) while another
 * PROCESS writes the file fails at once with SQLITE_BUSY — SQLite never waits on a read lock's
 * upgrade — so partitions on several workers burned their attempts on "database is locked".
 */
class ImmediateSqliteClient extends BetterSqliteClient {
  override transaction(container: unknown, config: unknown, outerTx?: unknown): Knex.Transaction {
    const trx = super.transaction(container, config, outerTx) as unknown as { begin: (conn: unknown) => Promise<unknown>; query: (conn: unknown, sql: string) => Promise<unknown> };
    trx.begin = (conn) => trx.query(conn, 'BEGIN IMMEDIATE;');
    return trx as unknown as Knex.Transaction;
  }
}

export function dialect(db: DbOrTrx): Dialect {
  return (db.client.config.client as string) === 'pg' ? 'postgres' : 'sqlite';
}

/**
 * The query's rows locked for the rest of the transaction on PostgreSQL (FOR UPDATE). SQLite
 * needs no row lock: its transactions begin IMMEDIATE and hold the one write lock (below).
 */
export function lockedOnPostgres(db: DbOrTrx, q: Knex.QueryBuilder): Knex.QueryBuilder {
  return dialect(db) === 'postgres' ? q.forUpdate() : q;
}

/**
 * The query's rows kept from being deleted (or their key changed) for the rest of the
 * transaction on PostgreSQL (FOR KEY SHARE: what a foreign-key check takes, so it blocks only a
 * DELETE, never an update of other columns nor another reader). SQLite: as above.
 */
export function keptOnPostgres(db: DbOrTrx, q: Knex.QueryBuilder): Knex.QueryBuilder {
  return dialect(db) === 'postgres' ? q.forKeyShare() : q;
}

/** The rows of a `db.raw` result: pg answers `{ rows }`, better-sqlite3 the array itself. */
export function rawRows<T = Record<string, unknown>>(db: DbOrTrx, result: unknown): T[] {
  return (dialect(db) === 'postgres' ? (result as { rows: T[] }).rows : (result as T[])) ?? [];
}

/** JSON columns are text in SQLite and jsonb in Postgres; pg parses jsonb for us. */
export function parseJson<T = Record<string, unknown>>(value: unknown): T {
  if (value === null || value === undefined) return value as T;
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** Bigint columns come back as strings from pg; every id and ms time we store fits in 2^53. */
export function toNumber(value: unknown): number {
  return typeof value === 'string' ? Number(value) : (value as number);
}

/** Serialise for a JSON column of either dialect. */
export function toJson(value: unknown): string {
  return JSON.stringify(value);
}
