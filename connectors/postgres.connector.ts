/**
 * A PostgreSQL database (or, with REDSHIFT_FLAVOR, Amazon Redshift) as a warehouse source; what
 * differs between the two is a PgFlavor (pg-flavor.ts). Reads run in a READ ONLY, REPEATABLE READ
 * transaction (a user's query cannot write, and every page sees one snapshot) through a
 * server-side cursor fetched a page at a time: the next page is only requested once the consumer
 * has taken the previous one, so memory holds one page whatever the table's size. An abort
 * cancels the running statement on the server (pg_cancel_backend) instead of waiting for it.
 */
import { classifyCode } from '../src/lib/error-codes.js';
import pg from 'pg';
import Cursor from 'pg-cursor';
import net from 'node:net';
import { z } from 'zod';
import { connectionStringProblem, parsePostgresConnectionString, type PostgresTarget } from './postgres-options.js';
import type { ReachGuard } from './reach.js';
import type { PgFlavor } from './pg-flavor.js';
import { POSTGRES_FLAVOR } from './postgres-flavor.js';
import { buildCountQuery, buildProbeQuery, buildReadQuery, buildSplitPointsQuery, distinctPoints, splitTableName } from './sql-builder.js';
import {
  WarehouseError,
  WarehouseReadAborted,
  type ColumnInfo,
  type ConnectorContext,
  type ReadSpec,
  type Row,
  type TableRef,
  type WarehouseConnector,
} from './warehouse.js';

export const postgresConfigSchema = z
  .object({
    connection_string: z
      .string({ error: 'config.connection_string is required: postgres://user:password@host:5432/database' })
      .superRefine((s, ctx) => {
        const problem = connectionStringProblem(s);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
  })
  .strict();

export type PostgresSourceConfig = z.infer<typeof postgresConfigSchema>;

/** Redshift speaks the PostgreSQL protocol: the same config, default port 5439. */
export const redshiftConfigSchema = z
  .object({
    connection_string: z
      .string({ error: 'config.connection_string is required: postgres://user:password@cluster.region.redshift.amazonaws.com:5439/database' })
      .superRefine((s, ctx) => {
        const problem = connectionStringProblem(s, 5439);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
  })
  .strict();

export interface PostgresConnectorOptions {
  /** Where the connection may go (checked on the resolved address before every connect). */
  reach: ReachGuard;
  /** PostgreSQL (default) or Redshift. */
  flavor?: PgFlavor;
  /** Rows fetched per cursor page. */
  pageSize?: number;
  connectTimeoutMs?: number;
}

// Type OIDs whose default parsing loses information or depends on the process time zone.
const INT8 = 20;
const NUMERIC = 1700;
const DATE = 1082;
const TIMESTAMP = 1114;
const TIMESTAMPTZ = 1184;

function int8(value: string): number | string {
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
}

/**
 * Timestamps stay the server's text (session time zone UTC): exact to the microsecond, so a
 * watermark bound back as a parameter compares exactly, and no local-time shifting happens.
 */
function typeParsers(flavor: PgFlavor): pg.CustomTypesConfig {
  return {
    getTypeParser: ((oid: number, format?: string) => {
      const own = flavor.parsers[oid];
      if (own) return own;
      if (oid === INT8) return int8;
      if (oid === NUMERIC) return (v: string) => (Number.isFinite(Number(v)) ? Number(v) : v);
      if (oid === DATE || oid === TIMESTAMP || oid === TIMESTAMPTZ) return (v: string) => v;
      return pg.types.getTypeParser(oid, format as 'text');
    }) as pg.CustomTypesConfig['getTypeParser'],
  };
}

/** Scrubs the password of the connection string from a message, should a driver echo it. */
function safeMessage(err: unknown, connectionString: string): string {
  let msg = err instanceof Error ? err.message : String(err);
  try {
    const pw = decodeURIComponent(new URL(connectionString).password);
    if (pw) msg = msg.split(pw).join('***');
  } catch {
    /* an unparsable URL has nothing we can scrub reliably */
  }
  return msg.split(connectionString).join('postgres://***');
}


/** What a data engineer should read first, by SQLSTATE or network code. */
const SQLSTATE_WORDS: Record<string, string> = {
  '28P01': 'wrong user name or password',
  '28000': 'login refused (check the user name, password and pg_hba rules)',
  '3D000': 'database does not exist',
  '42501': "missing grant (GRANT USAGE on the schema and SELECT on the table to the source's user)",
  '42P01': 'table not found',
  '42703': 'column not found',
  ECONNREFUSED: 'cannot reach the host (connection refused: is the port right and open to this server?)',
  ETIMEDOUT: 'cannot reach the host (timed out: a firewall may drop this server’s connections)',
  EHOSTUNREACH: 'cannot reach the host (no route)',
};

export class PostgresConnector implements WarehouseConnector {
  readonly type: PgFlavor['type'];
  private readonly flavor: PgFlavor;
  private readonly types: pg.CustomTypesConfig;
  private readonly pageSize: number;
  private readonly connectTimeoutMs: number;

  private readonly reach: ReachGuard;

  constructor(
    private readonly config: PostgresSourceConfig,
    options: PostgresConnectorOptions,
  ) {
    this.reach = options.reach;
    this.flavor = options.flavor ?? POSTGRES_FLAVOR;
    this.type = this.flavor.type;
    this.types = typeParsers(this.flavor);
    this.pageSize = options.pageSize ?? 2000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  }

  private wrap(err: unknown, what: string): WarehouseError {
    if (err instanceof WarehouseError || err instanceof WarehouseReadAborted) return err as WarehouseError;
    const code = (err as { code?: string }).code;
    const msg = safeMessage(err, this.config.connection_string);
    // By SQLSTATE / network code only (src/lib/error-codes.ts); an error without a code (the
    // driver's "connection terminated") may well pass on the next attempt.
    const retryable = classifyCode(code) !== 'permanent';
    const kind = code ? SQLSTATE_WORDS[code] : undefined;
    return new WarehouseError(`${what}: ${kind ? `${kind}: ` : ''}${msg}`, retryable);
  }

  /** A client connected to the checked, resolved address (never to a name resolved again later). */
  private async open(): Promise<pg.Client> {
    const target: PostgresTarget = parsePostgresConnectionString(this.config.connection_string, this.flavor.defaultPort);
    const address = await this.reach.resolve(target.host, target.port);
    const client = new pg.Client({
      host: address,
      port: target.port,
      user: target.user,
      // A function, so pg never falls back to PGPASSWORD or ~/.pgpass of this server.
      password: async () => target.password,
      database: target.database,
      ssl: target.ssl && { ...target.ssl, ...(net.isIP(target.host) ? {} : { servername: target.host }) },
      options: target.options,
      connectionTimeoutMillis: this.connectTimeoutMs,
      application_name: 'analytics-warehouse-sync',
      types: this.types,
    });
    // An idle client's socket error must not crash the process; the next query reports it.
    client.on('error', () => {});
    try {
      await client.connect();
      return client;
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
  }

  /** A session in UTC (read-only by default where the flavor can say so; every statement also runs in BEGIN READ ONLY). */
  private async connect(): Promise<pg.Client> {
    let client: pg.Client | undefined;
    try {
      client = await this.open();
      for (const sql of this.flavor.sessionSetup) await client.query(sql);
      return client;
    } catch (err) {
      await client?.end().catch(() => {});
      throw this.wrap(err, `cannot connect to ${this.flavor.label}`);
    }
  }

  /** Runs `fn` inside a READ ONLY transaction on a fresh session; an abort of `signal` cancels it on the server. */
  private async with<T>(fn: (client: pg.Client) => Promise<T>, what: string, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw new WarehouseReadAborted();
    const client = await this.connect();
    const pid = (client as unknown as { processID: number }).processID;
    const onAbort = () => void this.cancelBackend(pid);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await client.query('BEGIN READ ONLY');
      return await fn(client);
    } catch (err) {
      if (signal?.aborted) throw new WarehouseReadAborted();
      throw this.wrap(err, what);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      await client.query('ROLLBACK').catch(() => {});
      await client.end().catch(() => {});
    }
  }

  async test(): Promise<void> {
    await this.with(async (c) => void (await c.query('SELECT 1')), `${this.flavor.label} connection test failed`);
  }

  async describe(source: TableRef): Promise<ColumnInfo[]> {
    return this.with(
      (c) => ('table' in source ? describeTable(c, this.flavor, source.table) : describeQuery(c, this.flavor, source.query)),
      'cannot read the source schema',
    );
  }

  async count(spec: ReadSpec, ctx?: ConnectorContext): Promise<number> {
    return this.with(async (c) => {
      const q = buildCountQuery(spec, this.flavor.dialect);
      const res = await c.query(q.sql, q.params);
      return Number(res.rows[0].n);
    }, 'counting source rows failed', ctx?.signal);
  }

  async splitPoints(spec: ReadSpec, column: string, every: number, ctx?: ConnectorContext): Promise<(string | number)[]> {
    return this.with(async (c) => {
      const q = buildSplitPointsQuery(spec, column, every, this.flavor.dialect);
      return distinctPoints((await c.query(q.sql, q.params)).rows.map((r) => r.v));
    }, 'planning partitions failed', ctx?.signal);
  }

  async *stream(spec: ReadSpec, ctx: ConnectorContext): AsyncIterable<Row> {
    for await (const page of this.streamBatches(spec, ctx, this.pageSize)) yield* page;
  }

  /** Each cursor page is one batch: the next page is fetched only when the consumer asks. */
  async *streamBatches(spec: ReadSpec, ctx: ConnectorContext, size: number): AsyncIterable<Row[]> {
    const client = await this.connect();
    const pid = (client as unknown as { processID: number }).processID;
    let cancelled = false;
    const onAbort = () => {
      cancelled = true;
      void this.cancelBackend(pid);
    };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    let cursor: Cursor | undefined;
    try {
      if (ctx.signal.aborted) throw new WarehouseReadAborted();
      await client.query(this.flavor.beginStream);
      const q = buildReadQuery(spec, this.flavor.dialect);
      cursor = client.query(new Cursor(q.sql, q.params));
      for (;;) {
        let rows: Row[];
        try {
          rows = await cursor.read(size);
        } catch (err) {
          if (cancelled || ctx.signal.aborted) throw new WarehouseReadAborted();
          throw this.wrap(err, `reading from ${this.flavor.label} failed`);
        }
        if (rows.length === 0) break;
        yield rows;
        if (ctx.signal.aborted) throw new WarehouseReadAborted();
      }
    } finally {
      ctx.signal.removeEventListener('abort', onAbort);
      await cursor?.close().catch(() => {});
      await client.query('ROLLBACK').catch(() => {});
      await client.end().catch(() => {});
    }
  }

  /** Cancels the statement a streaming connection is running, from a second connection. */
  private async cancelBackend(pid: number): Promise<void> {
    let killer: pg.Client | undefined;
    try {
      killer = await this.open();
      await killer.query('SELECT pg_cancel_backend($1)', [pid]);
    } catch {
      /* the stream ends anyway once the consumer stops pulling */
    } finally {
      await killer?.end().catch(() => {});
    }
  }

  async close(): Promise<void> {}
}

async function describeTable(c: pg.Client, flavor: PgFlavor, table: string): Promise<ColumnInfo[]> {
  const parts = splitTableName(table);
  if (parts.length > 2 && flavor.type === 'redshift') throw new WarehouseError(`Redshift table names are [schema.]table, not ${JSON.stringify(table)}`);
  // database.schema.table: the database is the connection's own.
  const [schema, name] = parts.length === 1 ? [undefined, parts[0]!] : [parts[parts.length - 2]!, parts[parts.length - 1]!];
  const cols = await flavor.describeTable(c, schema, name);
  if (cols.length === 0) throw new WarehouseError(`table not found: ${table}`);
  // The catalog shows a table's columns to anyone who may use its schema; reading it needs SELECT.
  try {
    await c.query(buildProbeQuery({ table }, flavor.dialect));
  } catch (err) {
    if ((err as { code?: string }).code !== '42501') throw err;
    throw new WarehouseError(`missing grant: ${err instanceof Error ? err.message : String(err)} (GRANT SELECT on the table, and USAGE on its schema, to the source's user)`);
  }
  return cols;
}

/** `$1, $2, …` for n values (scalar parameters only: Redshift's leader node has no array types). */
const placeholders = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `$${from + i}`).join(', ');

/** A query's columns from a zero-row run; nullability is known for columns taken straight from a table. */
async function describeQuery(c: pg.Client, flavor: PgFlavor, query: string): Promise<ColumnInfo[]> {
  let res: pg.QueryResult;
  try {
    res = await c.query(buildProbeQuery({ query }, flavor.dialect));
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    const code = (err as { code?: string }).code;
    if (code === '42P01') throw new WarehouseError(`table not found: ${msg}`);
    if (code === '42703') throw new WarehouseError(`column not found: ${msg}`);
    if (code === '42501') throw new WarehouseError(`missing grant: ${msg} (GRANT SELECT on the table, and USAGE on its schema, to the source's user)`);
    throw new WarehouseError(`the source rejected the query: ${msg}`);
  }
  const fields = res.fields;
  const oids = [...new Set(fields.map((f) => f.dataTypeID))];
  const types = oids.length ? await c.query(`SELECT oid, format_type(oid, NULL) AS name FROM pg_type WHERE oid IN (${placeholders(oids.length)})`, oids) : { rows: [] };
  const typeName = new Map<number, string>(types.rows.map((r) => [Number(r.oid), String(r.name)]));
  const origins = fields.filter((f) => f.tableID > 0);
  const notNull = new Set<string>();
  if (origins.length > 0) {
    const pairs = origins.map((_, i) => `(attrelid = $${2 * i + 1} AND attnum = $${2 * i + 2})`).join(' OR ');
    const att = await c.query(`SELECT attrelid, attnum FROM pg_attribute WHERE attnotnull AND (${pairs})`, origins.flatMap((f) => [f.tableID, f.columnID]));
    for (const r of att.rows) notNull.add(`${r.attrelid}:${r.attnum}`);
  }
  return fields.map((f) => ({
    name: f.name,
    type: (typeName.get(f.dataTypeID) ?? 'unknown').toLowerCase(),
    nullable: !notNull.has(`${f.tableID}:${f.columnID}`),
  }));
}
