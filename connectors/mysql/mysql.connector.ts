/**
 * MySQL and MariaDB as a warehouse source, through mysql2. Each read is one connection in a UTC,
 * utf8mb4, READ ONLY session (every statement, the count included, runs in a read-only
 * transaction), streamed with back-pressure: mysql2 pauses the socket while the consumer has not
 * taken the rows buffered so far. The latest-row window is pushed down (ROW_NUMBER, MySQL 8 /
 * MariaDB 10.2+). An abort runs KILL QUERY from a second connection, so a long statement stops on
 * the server instead of being waited for. Connections go to the address the reach rules checked.
 */
import mysql from 'mysql2';
import net from 'node:net';
import { buildCountQuery, buildReadQuery, buildSplitPointsQuery, cleanUserQuery, distinctPoints, splitTableName, type SqlDialect } from '../sql-builder.js';
import type { ReachGuard } from '../reach.js';
import {
  WarehouseError,
  WarehouseReadAborted,
  type ColumnInfo,
  type ConnectorContext,
  type ReadSpec,
  type Row,
  type TableRef,
  type WarehouseConnector,
} from '../warehouse.js';
import { parseMysqlConnectionString, type MysqlSourceConfig, type MysqlTarget } from './mysql-options.js';
import { MYSQL_TYPE_NAMES, mysqlTypeCast } from './mysql-values.js';

/** Backtick-quoted identifiers (reserved words such as `order` or `key` stay names). */
export function quoteMysqlIdent(name: string): string {
  if (name.length === 0) throw new WarehouseError('an empty column or table name is not allowed');
  if (name.includes('\u0000')) throw new WarehouseError('a name must not contain NUL characters');
  return `\`${name.replace(/`/g, '``')}\``;
}

export const MYSQL_DIALECT: SqlDialect = {
  name: 'mysql',
  placeholder: () => '?',
  // MySQL has no OFFSET without LIMIT: the documented idiom is the largest row count.
  offset: (p) => `LIMIT 18446744073709551615 OFFSET ${p}`,
  quote: quoteMysqlIdent,
  // No NULLS LAST: order by "is null" first (false < true), then the value.
  descNullsLast: (e) => `${e} IS NULL, ${e} DESC`,
  castText: (e) => `CAST(${e} AS CHAR)`,
};

const ER = {
  ACCESS_DENIED: 1045,
  DB_ACCESS_DENIED: 1044,
  BAD_DB: 1049,
  TABLE_ACCESS_DENIED: 1142,
  COLUMN_ACCESS_DENIED: 1143,
  NO_SUCH_TABLE: 1146,
  BAD_FIELD: 1054,
  PARSE: 1064,
  QUERY_INTERRUPTED: 1317,
  READ_ONLY_TRANSACTION: 1792,
} as const;

/** A driver error as a WarehouseError in words a data engineer acts on (never the password). */
function translate(err: unknown, what: string, target: MysqlTarget): WarehouseError {
  if (err instanceof WarehouseError) return err;
  const e = err as { errno?: number; code?: string; message?: string; sqlMessage?: string };
  let msg = e.sqlMessage ?? e.message ?? String(err);
  if (target.password) msg = msg.split(target.password).join('***');
  switch (e.errno) {
    case ER.ACCESS_DENIED:
      return new WarehouseError(`wrong user name or password: ${msg}`);
    case ER.DB_ACCESS_DENIED:
    case ER.TABLE_ACCESS_DENIED:
    case ER.COLUMN_ACCESS_DENIED:
      return new WarehouseError(`missing grant: ${msg} (GRANT SELECT ON <database>.* TO the source's user)`);
    case ER.BAD_DB:
      return new WarehouseError(`database does not exist: ${msg}`);
    case ER.NO_SUCH_TABLE:
      return new WarehouseError(`table not found: ${msg}`);
    case ER.BAD_FIELD:
      return new WarehouseError(`column not found: ${msg}`);
    case ER.PARSE:
      return new WarehouseError(`the source rejected the query: ${msg}`);
    case ER.READ_ONLY_TRANSACTION:
      return new WarehouseError(`the source is read-only for syncs: ${msg}`);
  }
  const network = ['ECONNREFUSED', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'PROTOCOL_CONNECTION_LOST', 'EPIPE'];
  if (e.code && network.includes(e.code)) return new WarehouseError(`${what}: cannot reach ${target.host}:${target.port} (${e.code})`, true);
  // Other server errors (lock waits, restarts) may pass; protocol errors of ours would repeat.
  return new WarehouseError(`${what}: ${msg}`, e.errno === undefined || e.errno < 1000 || e.errno >= 2000);
}

export interface MysqlConnectorOptions {
  reach: ReachGuard;
  connectTimeoutMs?: number;
}

export class MysqlConnector implements WarehouseConnector {
  readonly type = 'mysql' as const;
  private readonly target: MysqlTarget;

  constructor(
    config: MysqlSourceConfig,
    private readonly options: MysqlConnectorOptions,
  ) {
    this.target = parseMysqlConnectionString(config.connection_string);
  }

  /** A connection to the checked address, in a UTC, utf8mb4, read-only session. */
  private async connect(): Promise<mysql.Connection> {
    const t = this.target;
    const address = await this.options.reach.resolve(t.host, t.port);
    const conn = mysql.createConnection({
      host: address,
      port: t.port,
      user: t.user,
      password: t.password,
      database: t.database,
      charset: 'UTF8MB4_UNICODE_CI',
      timezone: 'Z',
      dateStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
      typeCast: mysqlTypeCast,
      multipleStatements: false,
      // No LOAD DATA LOCAL: the server could ask for any file of ours.
      flags: ['-LOCAL_FILES', '-CONNECT_ATTRS'],
      connectTimeout: this.options.connectTimeoutMs ?? 10_000,
      ssl: t.ssl ? { ...t.ssl, ...(net.isIP(t.host) ? {} : { servername: t.host }) } : undefined,
    });
    conn.on('error', () => {}); // reported by the statement that meets it
    try {
      await new Promise<void>((resolve, reject) => conn.connect((err) => (err ? reject(err) : resolve())));
      await run(conn, "SET time_zone = '+00:00'");
      await run(conn, 'SET SESSION TRANSACTION READ ONLY');
      return conn;
    } catch (err) {
      conn.destroy();
      throw translate(err, 'cannot connect to MySQL', t);
    }
  }

  /** Runs `fn` in a READ ONLY transaction on a fresh connection; an abort of `signal` runs KILL QUERY. */
  private async with<T>(fn: (c: mysql.Connection) => Promise<T>, what: string, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw new WarehouseReadAborted();
    const conn = await this.connect();
    const onAbort = () => void this.killQuery(conn.threadId);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await run(conn, 'START TRANSACTION READ ONLY');
      return await fn(conn);
    } catch (err) {
      if (signal?.aborted) throw new WarehouseReadAborted();
      throw translate(err, what, this.target);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      conn.destroy();
    }
  }

  async test(): Promise<void> {
    await this.with((c) => run(c, 'SELECT 1'), 'MySQL connection test failed');
  }

  async describe(source: TableRef): Promise<ColumnInfo[]> {
    return this.with((c) => ('table' in source ? describeTable(c, source.table) : describeQuery(c, source.query)), 'cannot read the source schema');
  }

  async count(spec: ReadSpec, ctx?: ConnectorContext): Promise<number> {
    return this.with(
      async (c) => {
        const q = buildCountQuery(spec, MYSQL_DIALECT);
        const [rows] = await run(c, q.sql, q.params);
        return Number((rows as Row[])[0]!.n);
      },
      'counting source rows failed',
      ctx?.signal,
    );
  }

  async splitPoints(spec: ReadSpec, column: string, every: number, ctx?: ConnectorContext): Promise<(string | number)[]> {
    return this.with(
      async (c) => {
        const q = buildSplitPointsQuery(spec, column, every, MYSQL_DIALECT);
        const [rows] = await run(c, q.sql, q.params);
        return distinctPoints((rows as { v: unknown }[]).map((r) => r.v));
      },
      'planning partitions failed',
      ctx?.signal,
    );
  }

  async *stream(spec: ReadSpec, ctx: ConnectorContext): AsyncIterable<Row> {
    for await (const batch of this.streamBatches(spec, ctx, 1000)) yield* batch;
  }

  async *streamBatches(spec: ReadSpec, ctx: ConnectorContext, size: number): AsyncIterable<Row[]> {
    if (ctx.signal.aborted) throw new WarehouseReadAborted();
    const conn = await this.connect();
    let cancelled = false;
    const onAbort = () => {
      cancelled = true;
      void this.killQuery(conn.threadId);
    };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    let stream: NodeJS.ReadableStream & { destroy(): void } | undefined;
    try {
      await run(conn, 'START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
      const q = buildReadQuery(spec, MYSQL_DIALECT);
      stream = conn.query({ sql: q.sql, values: q.params }).stream({ highWaterMark: size }) as unknown as typeof stream;
      let batch: Row[] = [];
      try {
        for await (const row of stream as AsyncIterable<Row>) {
          batch.push(row);
          if (batch.length >= size) {
            yield batch;
            batch = [];
            if (ctx.signal.aborted) throw new WarehouseReadAborted();
          }
        }
      } catch (err) {
        if (err instanceof WarehouseReadAborted || cancelled || ctx.signal.aborted) throw new WarehouseReadAborted();
        throw translate(err, 'reading from MySQL failed', this.target);
      }
      if (batch.length > 0) yield batch;
      if (ctx.signal.aborted) throw new WarehouseReadAborted();
    } catch (err) {
      if (err instanceof WarehouseReadAborted || err instanceof WarehouseError) throw err;
      if (cancelled || ctx.signal.aborted) throw new WarehouseReadAborted();
      throw translate(err, 'reading from MySQL failed', this.target);
    } finally {
      ctx.signal.removeEventListener('abort', onAbort);
      stream?.destroy();
      conn.destroy();
    }
  }

  /** Stops the statement a streaming connection runs, from a second connection. */
  private async killQuery(threadId: number | null): Promise<void> {
    if (threadId === null) return;
    let killer: mysql.Connection | undefined;
    try {
      killer = await this.connect();
      await run(killer, `KILL QUERY ${Number(threadId)}`);
    } catch {
      /* the stream ends anyway once the consumer stops pulling */
    } finally {
      killer?.destroy();
    }
  }

  async close(): Promise<void> {}
}

function run(conn: mysql.Connection, sql: string, values: unknown[] = []): Promise<[unknown, mysql.FieldPacket[]]> {
  return new Promise((resolve, reject) => {
    conn.query({ sql, values }, (err, rows, fields) => (err ? reject(err) : resolve([rows, fields as mysql.FieldPacket[]])));
  });
}

async function describeTable(c: mysql.Connection, table: string): Promise<ColumnInfo[]> {
  const parts = splitTableName(table);
  if (parts.length > 2) throw new WarehouseError(`MySQL table names are [database.]table, not ${JSON.stringify(table)}`);
  const [schema, name] = parts.length === 2 ? [parts[0]!, parts[1]!] : [null, parts[0]!];
  const [rows] = await run(
    c,
    `SELECT COLUMN_NAME AS name, COLUMN_TYPE AS type, IS_NULLABLE AS nullable FROM information_schema.COLUMNS
      WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
    [schema, name],
  );
  const cols = rows as { name: string; type: string; nullable: string }[];
  if (cols.length === 0) {
    // information_schema only lists what the user may see: tell a missing grant from a missing table.
    await run(c, `SELECT 1 FROM ${parts.map(quoteMysqlIdent).join('.')} LIMIT 0`);
    throw new WarehouseError(`table not found: ${table}`);
  }
  return cols.map((r) => ({ name: r.name, type: String(r.type).toLowerCase(), nullable: r.nullable === 'YES' }));
}

const NOT_NULL_FLAG = 1;

/**
 * A query's columns from preparing it (nothing runs): the server describes the user's own
 * statement, so NOT NULL is known for columns taken straight from a table (an expression or a
 * derived table's column counts as nullable, as on the other sources).
 */
async function describeQuery(c: mysql.Connection, query: string): Promise<ColumnInfo[]> {
  const columns = await new Promise<mysql.FieldPacket[]>((resolve, reject) => {
    c.prepare(cleanUserQuery(query), (err, stmt) => {
      if (err) return reject(err);
      const cols = ((stmt as unknown as { columns?: mysql.FieldPacket[] }).columns ?? []).slice();
      stmt.close();
      resolve(cols);
    });
  });
  return columns.map((f) => {
    const meta = f as unknown as { orgTable?: string; orgName?: string; flags?: number; columnType?: number };
    const direct = Boolean(meta.orgTable) && Boolean(meta.orgName);
    return {
      name: f.name,
      type: MYSQL_TYPE_NAMES[Number(meta.columnType)] ?? 'unknown',
      nullable: !(direct && (Number(meta.flags ?? 0) & NOT_NULL_FLAG) !== 0),
    };
  });
}
