/**
 * The Databricks warehouse source, through the SQL Statement Execution API (REST; see
 * docs/warehouse.md for why not @databricks/sql's Thrift protocol): every read is one statement on
 * the SQL warehouse named by `http_path` (`POST /api/2.0/sql/statements`, INLINE JSON_ARRAY
 * results, named typed parameters, the source's catalog and schema), polled while it runs; its
 * result chunks are fetched one ahead of the consumer (`next_chunk_internal_link`), and an aborted
 * read cancels the statement.
 */
import { ChangesUnavailable, WarehouseError, WarehouseReadAborted, type ChangeRow, type ColumnInfo, type ConnectorContext, type ReadSpec, type Row, type TableRef, type WarehouseConnector } from '../warehouse.js';
import type { ReachGuard } from '../reach.js';
import { StatementClient, statementError } from './databricks-client.js';
import { baseUrl, warehouseId, type DatabricksSourceConfig } from './databricks-options.js';
import { buildChangesSql, buildCountSql, buildReadSql, CHANGE_POINT_SQL, tableParts, type DatabricksSql, type StatementParameter } from './databricks-sql.js';
import { rowBuilder, type ManifestColumn } from './databricks-values.js';
import { SchemaCache } from '../schema-cache.js';

export interface DatabricksConnectorOptions {
  config: DatabricksSourceConfig;
  reach?: ReachGuard;
  /** Pause between polls of a running statement. */
  pollMs?: number;
}

interface Chunk {
  data_array?: (string | null)[][];
  next_chunk_internal_link?: string;
}

interface StatementResponse {
  statement_id: string;
  status: { state: 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELED' | 'CLOSED'; error?: { error_code?: string; message?: string } };
  manifest?: { schema?: { columns?: ManifestColumn[] }; total_row_count?: number; total_chunk_count?: number };
  result?: Chunk;
}

const STATEMENTS = '/api/2.0/sql/statements';

export class DatabricksConnector implements WarehouseConnector {
  readonly type = 'databricks' as const;
  private readonly client: StatementClient;
  private readonly schemas = new SchemaCache();

  constructor(private readonly options: DatabricksConnectorOptions) {
    this.client = new StatementClient(baseUrl(options.config), options.config.token, options.reach);
  }

  /** Runs a trivial statement: the token, CAN USE on the warehouse, and the catalog and schema. */
  async test(): Promise<void> {
    for await (const _ of this.chunks({ query: 'SELECT 1 AS ok', params: [] }, quietCtx())) void _;
  }

  async describe(source: TableRef, signal?: AbortSignal): Promise<ColumnInfo[]> {
    return this.schemas.get(source, () => this.describeUncached(source, signal));
  }

  /** A table's columns from Unity Catalog's information_schema (it knows NOT NULL); a query's from a LIMIT 0 run. */
  private async describeUncached(source: TableRef, signal?: AbortSignal): Promise<ColumnInfo[]> {
    const ctx = quietCtx(signal);
    if ('query' in source) {
      const q = source.query.trim().replace(/[;\s]+$/, '');
      const { columns } = await this.collect({ query: `SELECT * FROM (${q}) AS __wh_q LIMIT 0`, params: [] }, ctx);
      return columns.map((c) => ({ name: c.name, type: (c.type_name ?? 'string').toLowerCase(), nullable: true }));
    }
    const parts = tableParts(source.table);
    const table = parts[parts.length - 1]!;
    const schema = parts.length >= 2 ? parts[parts.length - 2] : this.options.config.schema;
    const catalog = parts.length === 3 ? parts[0] : this.options.config.catalog;
    if (!catalog || !schema) {
      throw new WarehouseError(`table ${JSON.stringify(source.table)} needs a catalog and schema: name it catalog.schema.table, or set catalog and schema on the source`);
    }
    const params: StatementParameter[] = [
      { name: 's', value: schema.toLowerCase(), type: 'STRING' },
      { name: 't', value: table.toLowerCase(), type: 'STRING' },
    ];
    const { rows } = await this.collect(
      {
        query:
          `SELECT column_name, data_type, is_nullable FROM \`${catalog}\`.information_schema.columns ` +
          'WHERE lower(table_schema) = :s AND lower(table_name) = :t ORDER BY ordinal_position',
        params,
      },
      ctx,
    );
    if (rows.length === 0) throw new WarehouseError(`table not found: ${catalog}.${schema}.${table} (or the token may not read it: SELECT on the table is needed)`);
    return rows.map((r) => ({ name: String(r.column_name), type: String(r.data_type).toLowerCase(), nullable: r.is_nullable !== 'NO' }));
  }

  async *stream(spec: ReadSpec, ctx: ConnectorContext): AsyncIterable<Row> {
    for await (const batch of this.streamBatches(spec, ctx, Number.MAX_SAFE_INTEGER)) yield* batch;
  }

  async *streamBatches(spec: ReadSpec, ctx: ConnectorContext, size: number): AsyncIterable<Row[]> {
    const sql = buildReadSql(spec, await this.describe(spec.source, ctx.signal));
    for await (const { rows } of this.chunks(sql, ctx)) {
      for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size);
    }
  }

  async changePoint(ctx: ConnectorContext): Promise<number> {
    const { rows } = await this.collect(CHANGE_POINT_SQL, ctx);
    return Number(rows[0]?.now_ms);
  }

  /** The change data feed since `since`, the last change per key; a permanent failure of it means no usable feed. */
  async *streamChanges(spec: ReadSpec, since: number, keyColumn: string, ctx: ConnectorContext): AsyncIterable<ChangeRow> {
    const sql = buildChangesSql(spec, await this.describe(spec.source, ctx.signal), since, keyColumn);
    try {
      for await (const { rows } of this.chunks(sql, ctx)) {
        for (const { _change_type: type, ...row } of rows) yield { action: type === 'insert' || type === 'update_postimage' ? 'upsert' : 'delete', row };
      }
    } catch (err) {
      if (err instanceof WarehouseError && !err.retryable) throw new ChangesUnavailable(err.message, { cause: err });
      throw err;
    }
  }

  /** Rows `stream(spec)` would yield (one `SELECT COUNT(*)` over the same query; for progress). */
  async count(spec: ReadSpec, ctx: ConnectorContext): Promise<number> {
    const { rows } = await this.collect(buildCountSql(spec, await this.describe(spec.source, ctx.signal)), ctx);
    return Number(rows[0]?.n ?? 0);
  }

  async close(): Promise<void> {
    this.schemas.clear();
  }

  private async collect(sql: DatabricksSql, ctx: ConnectorContext): Promise<{ columns: ManifestColumn[]; rows: Row[] }> {
    let columns: ManifestColumn[] = [];
    const rows: Row[] = [];
    for await (const chunk of this.chunks(sql, ctx)) {
      columns = chunk.columns;
      rows.push(...chunk.rows);
    }
    return { columns, rows };
  }

  /** The result chunks of one statement, fetched as they are consumed. */
  private async *chunks(sql: DatabricksSql, ctx: ConnectorContext): AsyncIterable<{ columns: ManifestColumn[]; rows: Row[] }> {
    const { signal } = ctx;
    const cfg = this.options.config;
    if (signal.aborted) throw new WarehouseReadAborted();
    const started = Date.now();
    let id: string | undefined;
    let finished = false;
    let cancelled: Promise<unknown> | undefined;
    const cancel = () => {
      if (id && !finished) cancelled ??= this.client.call('POST', `${STATEMENTS}/${id}/cancel`, {}).catch(() => {});
      return cancelled;
    };
    const onAbort = () => void cancel();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const submitted = this.client.call<StatementResponse>('POST', STATEMENTS, {
        statement: sql.query,
        warehouse_id: warehouseId(cfg.http_path),
        catalog: cfg.catalog,
        schema: cfg.schema,
        parameters: sql.params.length > 0 ? sql.params : undefined,
        disposition: 'INLINE',
        format: 'JSON_ARRAY',
        wait_timeout: '10s',
        on_wait_timeout: 'CONTINUE',
      });
      // Not passed the signal: if we are aborted mid-request we still learn the id, to cancel it.
      let st = await raceAbort(
        submitted.then((r) => {
          id = r.statement_id;
          if (signal.aborted) void cancel();
          return r;
        }),
        signal,
      );
      while (st.status.state === 'PENDING' || st.status.state === 'RUNNING') {
        await sleep(this.options.pollMs ?? 250, signal);
        st = await this.client.call<StatementResponse>('GET', `${STATEMENTS}/${id}`, undefined, signal);
      }
      if (st.status.state !== 'SUCCEEDED') {
        finished = true;
        throw st.status.state === 'FAILED' ? statementError(st.status.error) : new WarehouseError(`the statement ended ${st.status.state}`, true);
      }
      const columns = st.manifest?.schema?.columns ?? [];
      const build = rowBuilder(columns);
      ctx.log.info({ statementId: id, rows: st.manifest?.total_row_count, chunks: st.manifest?.total_chunk_count, executeMs: Date.now() - started }, 'databricks statement done; reading chunks');
      // The first chunk is yielded even when empty: it carries the columns (describe of a query).
      let chunk: Chunk | undefined = st.result ?? {};
      let first = true;
      while (chunk) {
        const data = chunk.data_array ?? [];
        const next: string | undefined = chunk.next_chunk_internal_link;
        // The next chunk is on its way while this one is consumed: the warehouse serving it and
        // the sync preparing this one overlap. One chunk ahead, no more.
        const pending: Promise<Chunk> | undefined = next ? this.client.call<Chunk>('GET', next, undefined, signal) : undefined;
        pending?.catch(() => {}); // awaited below; a consumer that stops early leaves it unobserved
        if (data.length > 0 || first) yield { columns, rows: data.map(build) };
        first = false;
        chunk = pending ? await pending : undefined;
      }
      finished = true;
    } catch (err) {
      throw signal.aborted ? new WarehouseReadAborted() : err;
    } finally {
      signal.removeEventListener('abort', onAbort);
      // The consumer stopped early (break, error, abort): the warehouse can stop too.
      await cancel();
    }
  }
}

function quietCtx(signal = new AbortController().signal): ConnectorContext {
  return { log: { info: () => {}, warn: () => {} }, signal };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return raceAbort(new Promise((r) => setTimeout(r, ms).unref()), signal);
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    p.catch(() => {});
    return Promise.reject(new WarehouseReadAborted());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new WarehouseReadAborted());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (err: unknown) => (signal.removeEventListener('abort', onAbort), reject(err)),
    );
  });
}
