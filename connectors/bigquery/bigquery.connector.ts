/**
 * The BigQuery warehouse source, through the official @google-cloud/bigquery client: every read
 * is one jobs.query call (GoogleSQL, typed named parameters, the source's location), then the
 * result pages through jobs.getQueryResults with `pageToken` / `maxResults`. A page is fetched
 * while the consumer takes the previous one, never further ahead (back-pressure: memory holds two
 * pages), and an aborted read cancels its job with jobs.cancel.
 */
import { randomUUID } from 'node:crypto';
import { BigQuery, type Job } from '@google-cloud/bigquery';
import type { ReachGuard } from '../reach.js';
import { WarehouseError, WarehouseReadAborted, type ColumnInfo, type ConnectorContext, type ReadSpec, type Row, type TableRef, type WarehouseConnector } from '../warehouse.js';
import { jwtClient } from './bigquery-auth.js';
import { translateError } from './bigquery-errors.js';
import type { BigQuerySourceConfig } from './bigquery-options.js';
import { buildCountSql, buildReadSql, standardType, tablePath, type BigQuerySql } from './bigquery-sql.js';
import { PARSE_OPTIONS, plainRow } from './bigquery-values.js';
import { SchemaCache } from '../schema-cache.js';

export interface BigQueryConnectorOptions {
  config: BigQuerySourceConfig;
  /** Rows asked for per page (`maxResults`); BigQuery also caps a page at 10 MB. */
  pageRows: number;
  /**
   * The reach rules (connectors/reach.ts). The token request resolves through them (an agent with
   * the guard's lookup); the API client cannot take an agent, so its host is checked right
   * before every API call instead.
   */
  reach?: ReachGuard;
}

interface SchemaField {
  name: string;
  type?: string;
  mode?: string;
  fields?: SchemaField[];
}

interface QueryResponse {
  jobReference?: { projectId: string; jobId: string; location?: string };
  jobComplete?: boolean;
  schema?: { fields?: SchemaField[] };
  rows?: unknown[];
  pageToken?: string;
  totalRows?: string;
}

// How long one jobs.query / getQueryResults call may wait for the job before answering
// "not complete yet" (then we ask again): short enough that an abort finds the job id soon.
const WAIT_MS = 5_000;

export class BigQueryConnector implements WarehouseConnector {
  readonly type = 'bigquery' as const;
  private client: BigQuery | undefined;
  private readonly schemas = new SchemaCache();

  constructor(private readonly options: BigQueryConnectorOptions) {}

  private get cfg(): BigQuerySourceConfig {
    return this.options.config;
  }

  private get endpoint(): string {
    return this.cfg.api_endpoint ?? 'https://bigquery.googleapis.com';
  }

  private get defaults() {
    return { projectId: this.cfg.project_id, dataset: this.cfg.dataset };
  }

  /** The client, after the API host passed the reach rules (checked before every call). */
  private async api(): Promise<BigQuery> {
    if (this.options.reach) {
      const u = new URL(this.endpoint);
      await this.options.reach.resolve(u.hostname, Number(u.port) || (u.protocol === 'https:' ? 443 : 80));
    }
    this.client ??= new BigQuery({
      projectId: this.cfg.project_id,
      location: this.cfg.location,
      apiEndpoint: this.cfg.api_endpoint,
      authClient: jwtClient(this.cfg.credentials_json, this.cfg.project_id, this.options.reach),
      // A failed request is retried by the run (with our error classification), not here for minutes.
      maxRetries: 2,
    });
    return this.client;
  }

  /**
   * Runs a trivial query (token exchange, bigquery.jobs.create) and reads the dataset's metadata
   * (it exists, the account may see it, and it lives in the configured location).
   */
  async test(): Promise<void> {
    await this.jobsQuery({ query: 'SELECT 1 AS ok', params: [] }, { maxResults: 1 });
    const { projectId, dataset } = this.defaults;
    let meta: { location?: string };
    try {
      [meta] = await (await this.api()).dataset(dataset, { projectId }).getMetadata();
    } catch (err) {
      throw translateError(err, this.endpoint, `reading dataset ${projectId}:${dataset}`);
    }
    const want = this.cfg.location;
    if (want && meta.location && meta.location.toLowerCase() !== want.toLowerCase()) {
      throw new WarehouseError(`dataset ${projectId}:${dataset} is in location ${meta.location}, not ${want}: set location to ${JSON.stringify(meta.location)}`);
    }
  }

  async describe(source: TableRef, signal?: AbortSignal): Promise<ColumnInfo[]> {
    return this.schemas.get(source, () => this.describeUncached(source, signal));
  }

  /** A table's schema from tables.get; a query's from a dry run (free, and it validates the SQL). */
  private async describeUncached(source: TableRef, signal?: AbortSignal): Promise<ColumnInfo[]> {
    let fields: SchemaField[];
    if ('table' in source) {
      const p = tablePath(source.table, this.defaults);
      try {
        const bq = await this.api();
        const [meta] = await abortable(bq.dataset(p.datasetId, { projectId: p.projectId }).table(p.tableId).getMetadata(), signal);
        fields = (meta as { schema?: { fields?: SchemaField[] } }).schema?.fields ?? [];
      } catch (err) {
        throw translateError(err, this.endpoint, `reading table ${p.projectId}.${p.datasetId}.${p.tableId}`);
      }
    } else {
      const res = await this.jobsQuery({ query: `SELECT * FROM (${source.query.trim().replace(/[;\s]+$/, '')})`, params: [] }, { dryRun: true }, signal);
      fields = res.schema?.fields ?? [];
    }
    return fields.map((f) => ({ name: f.name, type: standardType(f), nullable: f.mode !== 'REQUIRED' }));
  }

  async *stream(spec: ReadSpec, ctx: ConnectorContext): AsyncIterable<Row> {
    for await (const page of this.pages(spec, ctx)) yield* page;
  }

  async *streamBatches(spec: ReadSpec, ctx: ConnectorContext, size: number): AsyncIterable<Row[]> {
    for await (const page of this.pages(spec, ctx)) {
      for (let i = 0; i < page.length; i += size) yield page.slice(i, i + size);
    }
  }

  /** Rows `stream(spec)` would yield (one `SELECT COUNT(*)` over the same query; for progress). */
  async count(spec: ReadSpec, ctx: ConnectorContext): Promise<number> {
    const columns = await this.describe(spec.source, ctx.signal);
    let n = 0;
    for await (const page of this.pages(spec, ctx, buildCountSql(spec, columns, this.defaults))) n = Number(page[0]?.n ?? 0);
    return n;
  }

  async close(): Promise<void> {
    this.client = undefined;
    this.schemas.clear();
  }

  /** The result pages of a read: jobs.query, then getQueryResults until the last page. */
  private async *pages(spec: ReadSpec, ctx: ConnectorContext, sql?: BigQuerySql): AsyncIterable<Row[]> {
    const { signal } = ctx;
    if (signal.aborted) throw new WarehouseReadAborted();
    sql ??= buildReadSql(spec, await this.describe(spec.source, signal), this.defaults);
    const started = Date.now();
    let job: Job | undefined;
    let finished = false;
    let cancelled: Promise<unknown> | undefined;
    const cancel = () => {
      if (job && !finished) cancelled ??= job.cancel().catch(() => {});
      return cancelled;
    };
    const onAbort = () => void cancel();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const first = await this.jobsQuery(sql, { maxResults: this.options.pageRows }, signal, (j) => (job = j));
      let complete = first.jobComplete === true;
      // The next page is on its way while this one is consumed: BigQuery serving it and the sync
      // preparing this one overlap. One page ahead, no more.
      const fetchPage = (pageToken: string | undefined) => {
        const page = abortable(
          this.api().then(() => job!.getQueryResults({ maxResults: this.options.pageRows, pageToken, timeoutMs: undefined, autoPaginate: false, ...PARSE_OPTIONS })),
          signal,
        ).catch((err: unknown) => {
          throw signal.aborted ? new WarehouseReadAborted() : translateError(err, this.endpoint, 'reading query results');
        }) as unknown as Promise<[Row[], unknown, QueryResponse]>;
        page.catch(() => {}); // awaited below; a consumer that stops early leaves it unobserved
        return page;
      };
      let pending = !complete || first.pageToken ? fetchPage(first.pageToken) : undefined;
      if (complete) {
        ctx.log.info({ jobId: first.jobReference?.jobId, rows: first.totalRows, executeMs: Date.now() - started }, 'bigquery query done; paging rows');
        const rows = BigQuery.mergeSchemaWithRows_(first.schema, (first.rows ?? []) as never[], { ...PARSE_OPTIONS, listParams: { 'formatOptions.useInt64Timestamp': true } });
        if (rows.length > 0) yield rows.map(plainRow);
      }
      let pageToken = first.pageToken;
      while (pending) {
        if (signal.aborted) throw new WarehouseReadAborted();
        const [rows, , resp] = await pending;
        if (resp.jobComplete === false) {
          pending = fetchPage(pageToken); // still running: the call itself waited; ask again
          continue;
        }
        if (!complete) ctx.log.info({ jobId: job!.id, rows: resp.totalRows, executeMs: Date.now() - started }, 'bigquery query done; paging rows');
        complete = true;
        pageToken = resp.pageToken;
        pending = pageToken ? fetchPage(pageToken) : undefined;
        if (rows.length > 0) yield rows.map(plainRow);
      }
      finished = true;
    } finally {
      signal.removeEventListener('abort', onAbort);
      // The consumer stopped early (break, error, abort): the job needs no more of our money.
      await cancel();
    }
  }

  /** One jobs.query call; `onJob` learns the job as soon as BigQuery names it (to cancel it). */
  private async jobsQuery(sql: BigQuerySql, extra: Record<string, unknown>, signal?: AbortSignal, onJob?: (job: Job) => void): Promise<QueryResponse> {
    let bq: BigQuery;
    try {
      bq = await this.api();
    } catch (err) {
      throw translateError(err, this.endpoint, 'connecting');
    }
    const json = {
      query: sql.query,
      useLegacySql: false,
      parameterMode: sql.params.length > 0 ? 'NAMED' : undefined,
      queryParameters: sql.params.length > 0 ? sql.params : undefined,
      defaultDataset: { projectId: this.cfg.project_id, datasetId: this.cfg.dataset },
      location: this.cfg.location,
      timeoutMs: WAIT_MS,
      formatOptions: { useInt64Timestamp: true },
      requestId: randomUUID(),
      ...extra,
    };
    const request = new Promise<QueryResponse>((resolve, reject) => {
      bq.request({ method: 'POST', uri: '/queries', json }, (err, res) => (err ? reject(err) : resolve(res as QueryResponse)));
    }).then((res) => {
      const ref = res.jobReference;
      if (ref?.jobId) {
        const job = bq.job(ref.jobId, { location: ref.location ?? this.cfg.location });
        onJob?.(job);
        // Aborted while the call was in flight: the job exists now, so stop it.
        if (signal?.aborted) job.cancel().catch(() => {});
      }
      return res;
    });
    try {
      return await abortable(request, signal);
    } catch (err) {
      throw signal?.aborted ? new WarehouseReadAborted() : translateError(err, this.endpoint, 'running a query');
    }
  }
}

/** `p`, or a rejection with WarehouseReadAborted as soon as `signal` aborts (p runs on, ignored). */
function abortable<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) {
    p.catch(() => {});
    return Promise.reject(new WarehouseReadAborted());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new WarehouseReadAborted());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
