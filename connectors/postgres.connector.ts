/**
 * A PostgreSQL database as a warehouse source. Reads run in a READ ONLY, REPEATABLE READ
 * transaction (a user's query cannot write, and every page sees one snapshot) through a
 * server-side cursor fetched a page at a time: the next page is only requested once the consumer
 * has taken the previous one, so memory holds one page whatever the table's size. An abort
 * cancels the running statement on the server (pg_cancel_backend) instead of waiting for it.
 */
import pg from 'pg';
import Cursor from 'pg-cursor';
import { z } from 'zod';
import { buildCountQuery, buildProbeQuery, buildReadQuery, POSTGRES_DIALECT, quoteTable } from './sql-builder.js';
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
      .refine((s) => /^postgres(ql)?:\/\/./.test(s), 'config.connection_string must start with postgres:// or postgresql://'),
  })
  .strict();

export type PostgresSourceConfig = z.infer<typeof postgresConfigSchema>;

export interface PostgresConnectorOptions {
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
const typeParsers: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) => {
    if (oid === INT8) return int8;
    if (oid === NUMERIC) return (v: string) => (Number.isFinite(Number(v)) ? Number(v) : v);
    if (oid === DATE || oid === TIMESTAMP || oid === TIMESTAMPTZ) return (v: string) => v;
    return pg.types.getTypeParser(oid, format as 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

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

// SQLSTATE classes that no retry fixes: syntax/undefined objects (42), auth (28), bad database (3D), read-only (25).
const PERMANENT = /^(42|28|3D|25|22)/;

export class PostgresConnector implements WarehouseConnector {
  readonly type = 'postgres' as const;
  private readonly pageSize: number;
  private readonly connectTimeoutMs: number;

  constructor(
    private readonly config: PostgresSourceConfig,
    options: PostgresConnectorOptions = {},
  ) {
    this.pageSize = options.pageSize ?? 2000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  }

  private wrap(err: unknown, what: string): WarehouseError {
    if (err instanceof WarehouseError || err instanceof WarehouseReadAborted) return err as WarehouseError;
    const code = (err as { code?: string }).code;
    const msg = safeMessage(err, this.config.connection_string);
    const retryable = code ? !PERMANENT.test(code) : !/password|authentication|does not exist|ENOTFOUND|invalid/i.test(msg);
    return new WarehouseError(`${what}: ${msg}`, retryable);
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.config.connection_string,
      connectionTimeoutMillis: this.connectTimeoutMs,
      application_name: 'analytics-warehouse-sync',
      types: typeParsers,
    });
    // An idle client's socket error must not crash the process; the next query reports it.
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query("SET TIME ZONE 'UTC'");
      return client;
    } catch (err) {
      await client.end().catch(() => {});
      throw this.wrap(err, 'cannot connect to PostgreSQL');
    }
  }

  private async with<T>(fn: (client: pg.Client) => Promise<T>, what: string): Promise<T> {
    const client = await this.connect();
    try {
      return await fn(client);
    } catch (err) {
      throw this.wrap(err, what);
    } finally {
      await client.end().catch(() => {});
    }
  }

  async test(): Promise<void> {
    await this.with(async (c) => void (await c.query('SELECT 1')), 'PostgreSQL connection test failed');
  }

  async describe(source: TableRef): Promise<ColumnInfo[]> {
    return this.with((c) => ('table' in source ? describeTable(c, source.table) : describeQuery(c, source.query)), 'cannot read the source schema');
  }

  async count(spec: ReadSpec): Promise<number> {
    return this.with(async (c) => {
      const q = buildCountQuery(spec, POSTGRES_DIALECT);
      const res = await c.query(q.sql, q.params);
      return Number(res.rows[0].n);
    }, 'counting source rows failed');
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
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const q = buildReadQuery(spec, POSTGRES_DIALECT);
      cursor = client.query(new Cursor(q.sql, q.params));
      for (;;) {
        let rows: Row[];
        try {
          rows = await cursor.read(size);
        } catch (err) {
          if (cancelled || ctx.signal.aborted) throw new WarehouseReadAborted();
          throw this.wrap(err, 'reading from PostgreSQL failed');
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
    const killer = new pg.Client({ connectionString: this.config.connection_string, connectionTimeoutMillis: this.connectTimeoutMs });
    killer.on('error', () => {});
    try {
      await killer.connect();
      await killer.query('SELECT pg_cancel_backend($1)', [pid]);
    } catch {
      /* the stream ends anyway once the consumer stops pulling */
    } finally {
      await killer.end().catch(() => {});
    }
  }

  async close(): Promise<void> {}
}

async function describeTable(c: pg.Client, table: string): Promise<ColumnInfo[]> {
  const regclass = await c.query('SELECT to_regclass($1)::oid AS oid', [quoteTable(table)]);
  const oid = regclass.rows[0]?.oid;
  if (oid === null || oid === undefined) throw new WarehouseError(`table not found: ${table}`);
  const res = await c.query(
    `SELECT attname AS name, format_type(atttypid, atttypmod) AS type, NOT attnotnull AS nullable
       FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [oid],
  );
  return res.rows.map((r) => ({ name: r.name, type: String(r.type).toLowerCase(), nullable: r.nullable }));
}

/** A query's columns from a zero-row run; nullability is known for columns taken straight from a table. */
async function describeQuery(c: pg.Client, query: string): Promise<ColumnInfo[]> {
  let res: pg.QueryResult;
  try {
    await c.query('BEGIN READ ONLY');
    res = await c.query(buildProbeQuery({ query }));
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    const code = (err as { code?: string }).code;
    if (code === '42P01') throw new WarehouseError(`table not found: ${msg}`);
    if (code === '42703') throw new WarehouseError(`column not found: ${msg}`);
    throw new WarehouseError(`the source rejected the query: ${msg}`);
  } finally {
    await c.query('ROLLBACK').catch(() => {});
  }
  const fields = res.fields;
  const types = await c.query('SELECT oid, format_type(oid, NULL) AS name FROM pg_type WHERE oid = ANY($1::oid[])', [
    [...new Set(fields.map((f) => f.dataTypeID))],
  ]);
  const typeName = new Map<number, string>(types.rows.map((r) => [Number(r.oid), String(r.name)]));
  const origins = fields.filter((f) => f.tableID > 0);
  const notNull = new Set<string>();
  if (origins.length > 0) {
    const att = await c.query(
      'SELECT attrelid, attnum FROM pg_attribute WHERE attnotnull AND (attrelid, attnum) IN (SELECT * FROM unnest($1::oid[], $2::int2[]))',
      [origins.map((f) => f.tableID), origins.map((f) => f.columnID)],
    );
    for (const r of att.rows) notNull.add(`${r.attrelid}:${r.attnum}`);
  }
  return fields.map((f) => ({
    name: f.name,
    type: (typeName.get(f.dataTypeID) ?? 'unknown').toLowerCase(),
    nullable: !notNull.has(`${f.tableID}:${f.columnID}`),
  }));
}
