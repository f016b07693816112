/**
 * The Snowflake warehouse source, through the official snowflake-sdk. One session per connector
 * (opened on first use, closed by `close()`); every read is one statement whose result is
 * streamed with `statement.streamRows()`: the driver downloads result chunks only as the consumer
 * pulls rows, so memory stays flat however large the table.
 */
import type { Connection, RowStatement } from 'snowflake-sdk';
import { ChangesUnavailable, WarehouseError, type ChangeRow, type ColumnInfo, type ConnectorContext, type ReadSpec, type Row, type TableRef, type WarehouseConnector } from '../warehouse.js';
import { cancelledError, closeConnection, executeStatement, openConnection, translateError } from './snowflake-driver.js';
import type { SnowflakeConnectOptions } from './snowflake-options.js';
import { buildChangesSql, buildCountSql, buildReadSql, CHANGE_POINT_SQL, describeSql } from './snowflake-sql.js';
import { rowBuilder, type ColumnMeta } from './snowflake-values.js';
import { SchemaCache } from '../schema-cache.js';
import { inBatches } from '../../src/lib/in-batches.js';

export interface SnowflakeConnectorOptions {
  connect: SnowflakeConnectOptions;
  connectTimeoutMs: number;
  /** Set when the stored access_url is no longer allowed by the operator: every call fails with it. */
  refused?: string;
  /**
   * The reach rules (connectors/reach.ts) for the host the driver is about to log in to, run
   * before every login. The driver resolves the name again itself: for an operator-listed
   * access_url or Snowflake's own domain that leaves no tenant-controlled gap.
   */
  checkReach?: () => Promise<unknown>;
}

export class SnowflakeConnector implements WarehouseConnector {
  readonly type = 'snowflake' as const;
  private session: Promise<Connection> | undefined;
  private readonly schemas = new SchemaCache();

  constructor(private readonly options: SnowflakeConnectorOptions) {}

  /**
   * Logs in and checks the session is usable for reading: a warehouse must be active (Snowflake
   * only notices a missing or unusable warehouse at the first real query, so say it now).
   */
  async test(): Promise<void> {
    const conn = await this.connection();
    const stmt = await executeStatement(conn, 'SELECT CURRENT_WAREHOUSE() AS "warehouse", CURRENT_ROLE() AS "role"', []);
    const rows = await collect(stmt);
    const warehouse = rows[0]?.[0];
    if (warehouse === null || warehouse === undefined) {
      const asked = this.options.connect.warehouse;
      throw new WarehouseError(
        asked
          ? `Snowflake warehouse ${JSON.stringify(asked)} does not exist or the role cannot use it (GRANT USAGE ON WAREHOUSE … TO ROLE …)`
          : 'no Snowflake warehouse is active for this user: set `warehouse` on the source, or give the user a DEFAULT_WAREHOUSE',
      );
    }
  }

  async describe(source: TableRef, signal?: AbortSignal): Promise<ColumnInfo[]> {
    return this.schemas.get(source, () => this.describeUncached(source, signal));
  }

  private async describeUncached(source: TableRef, signal?: AbortSignal): Promise<ColumnInfo[]> {
    const stmt = await this.run(describeSql(source), [], signal);
    return (stmt.getColumns() ?? []).map((c) => ({ name: c.getName(), type: c.getType().toLowerCase(), nullable: c.isNullable() }));
  }

  async *stream(spec: ReadSpec, ctx: ConnectorContext): AsyncIterable<Row> {
    for await (const batch of this.streamBatches(spec, ctx, STREAM_BATCH_ROWS)) yield* batch;
  }

  async *streamBatches(spec: ReadSpec, ctx: ConnectorContext, size: number): AsyncIterable<Row[]> {
    if (ctx.signal.aborted) throw cancelledError();
    const columns = await this.describe(spec.source, ctx.signal);
    const { sqlText, binds } = buildReadSql(spec, columns);
    const started = Date.now();
    const stmt = await this.run(sqlText, binds, ctx.signal);
    ctx.log.info({ queryId: stmt.getQueryId(), rows: stmt.getNumRows(), executeMs: Date.now() - started }, 'snowflake query done; streaming rows');
    yield* rowBatchesOf(stmt, ctx, size);
  }

  async changePoint(ctx: ConnectorContext): Promise<number> {
    const rows = await collect(await this.run(CHANGE_POINT_SQL, [], ctx.signal));
    return Number(rows[0]?.[0]);
  }

  /** Net changes since `since` (CHANGES clause); a permanent failure of that query means no usable change tracking. */
  async *streamChanges(spec: ReadSpec, since: number, keyColumn: string, ctx: ConnectorContext): AsyncIterable<ChangeRow> {
    if (ctx.signal.aborted) throw cancelledError();
    const columns = await this.describe(spec.source, ctx.signal);
    const { sqlText, binds } = buildChangesSql(spec, columns, since, keyColumn);
    let stmt: RowStatement;
    try {
      stmt = await this.run(sqlText, binds, ctx.signal);
    } catch (err) {
      if (err instanceof WarehouseError && !err.retryable) throw new ChangesUnavailable(err.message, { cause: err });
      throw err;
    }
    // An update is a DELETE of the old version and an INSERT of the new (METADATA$ISUPDATE): both
    // are handed on, so a row whose key changed deletes the old key; the reader decides per key.
    for await (const { __action: action, __isupdate: _isUpdate, ...row } of rowsOf(stmt, ctx)) {
      if (action === 'INSERT') yield { action: 'upsert', row };
      else if (action === 'DELETE') yield { action: 'delete', row };
    }
  }

  /** Rows `stream(spec)` would yield (one `SELECT COUNT(*)` over the same query; for progress). */
  async count(spec: ReadSpec, ctx: ConnectorContext): Promise<number> {
    const columns = await this.describe(spec.source, ctx.signal);
    const { sqlText, binds } = buildCountSql(spec, columns);
    const rows = await collect(await this.run(sqlText, binds, ctx.signal));
    return Number(rows[0]?.[0] ?? 0);
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    this.schemas.clear();
    if (!session) return;
    const conn = await session.catch(() => undefined);
    if (conn) await closeConnection(conn);
  }

  private async run(sqlText: string, binds: (string | number)[], signal?: AbortSignal): Promise<RowStatement> {
    const conn = await this.connection();
    return executeStatement(conn, sqlText, binds, signal);
  }

  /** The session, opened on first use and again after Snowflake dropped it. */
  private async connection(): Promise<Connection> {
    if (this.options.refused) throw new WarehouseError(this.options.refused);
    if (this.session) {
      const conn = await this.session.catch(() => undefined);
      if (conn?.isUp()) return conn;
      this.session = undefined;
    }
    const check = this.options.checkReach?.() ?? Promise.resolve();
    const opening = check.then(() => openConnection(this.options.connect, this.options.connectTimeoutMs));
    this.session = opening;
    opening.catch(() => {
      if (this.session === opening) this.session = undefined;
    });
    return opening;
  }
}

/** Rows handed on together by `stream` and `streamChanges`: one await per batch, not per row. */
const STREAM_BATCH_ROWS = 1000;

async function* rowsOf(stmt: RowStatement, ctx: ConnectorContext): AsyncIterable<Row> {
  for await (const batch of rowBatchesOf(stmt, ctx, STREAM_BATCH_ROWS)) yield* batch;
}

/**
 * A statement's rows as objects in arrays of at most `size`, chunk by chunk as the consumer pulls;
 * the statement is cancelled on abort.
 */
async function* rowBatchesOf(stmt: RowStatement, ctx: ConnectorContext, size: number): AsyncIterable<Row[]> {
  const meta: ColumnMeta[] = (stmt.getColumns() ?? []).map((c) => ({ name: c.getName(), type: c.getType().toLowerCase(), scale: c.getScale() ?? 0 }));
  const build = rowBuilder(meta);
  const rows = stmt.streamRows();
  const onAbort = () => {
    stmt.cancel(() => {});
    rows.destroy(cancelledError());
  };
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  try {
    yield* inBatches(rows as AsyncIterable<unknown[]>, size, { map: build });
  } catch (err) {
    throw ctx.signal.aborted ? cancelledError() : translateError(err, 'query');
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    // The consumer stopped early (break, error): stop downloading chunks.
    if (!rows.destroyed) rows.destroy();
  }
}

/** All rows of a small result (array mode). */
function collect(stmt: RowStatement): Promise<unknown[][]> {
  return new Promise((resolve, reject) => {
    const out: unknown[][] = [];
    stmt
      .streamRows()
      .on('data', (r: unknown[]) => out.push(r))
      .on('end', () => resolve(out))
      .on('error', (err: unknown) => reject(translateError(err, 'query')));
  });
}
