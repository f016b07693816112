/**
 * Cases of bench/cloud-sync.bench.ts, each run in its own process against a stand-in the bench
 * started (test/bigquery-standin, test/databricks-standin): (a) the bare client read — every row
 * of the table through the raw API client (BigQuery: @google-cloud/bigquery's jobs.query +
 * getQueryResults pages, one page ahead; Databricks: the Statement Execution API's statement and
 * chunk links over fetch, one chunk ahead), counted and dropped — and (b) an events sync of the same table
 * (warehouse-sync-cases.ts `sync`, SQLite store).
 */
import { BigQuery } from '@google-cloud/bigquery';
import { jwtClient } from '../connectors/bigquery/bigquery-auth.js';
import { parseServiceAccountKey, type ServiceAccountKey } from '../connectors/bigquery/bigquery-options.js';
import { warehouseId } from '../connectors/databricks/databricks-options.js';
import type { SyncCaseArgs, SyncCaseResult } from './warehouse-sync-cases.js';

export { floor, sync } from './warehouse-sync-cases.js';

/** Rows per page / chunk both sides ask for (the connector's BigQuery page at the default batch size). */
export const PAGE_ROWS = 10_000;

export async function bareRead(args: SyncCaseArgs): Promise<SyncCaseResult> {
  const src = args.source;
  if (src.type !== 'bigquery' && src.type !== 'databricks') throw new Error(`bareRead: ${src.type} is not a cloud source`);
  const cfg = src.config as Record<string, string>;
  const started = process.hrtime.bigint();
  let n = 0;
  if (src.type === 'bigquery') {
    const key = (parseServiceAccountKey(cfg.credentials_json) as { key: ServiceAccountKey }).key;
    const bq = new BigQuery({ projectId: cfg.project_id, apiEndpoint: cfg.api_endpoint, location: cfg.location, authClient: jwtClient(key, cfg.project_id!) });
    // jobs.query, then getQueryResults pages by token, the next one requested while this one is
    // counted: the fastest read the client offers, and what the connector does (createQueryStream
    // waits for each page in turn).
    type Response = { jobReference?: { jobId?: string; location?: string }; jobComplete?: boolean; pageToken?: string; schema?: unknown; rows?: unknown[] };
    const first = await new Promise<Response>((resolve, reject) => {
      const json = { query: `SELECT * FROM ${src.table}`, useLegacySql: false, location: cfg.location, maxResults: PAGE_ROWS, formatOptions: { useInt64Timestamp: true } };
      bq.request({ method: 'POST', uri: '/queries', json }, (err, res) => (err ? reject(err) : resolve(res as Response)));
    });
    const job = bq.job(first.jobReference!.jobId!, { location: first.jobReference!.location ?? cfg.location });
    type Page = [unknown[], unknown, Response];
    const page = (pageToken?: string) => job.getQueryResults({ maxResults: PAGE_ROWS, pageToken, autoPaginate: false }) as unknown as Promise<Page>;
    let token = first.pageToken;
    let pending: Promise<Page> | undefined = first.jobComplete === false || token ? page(token) : undefined;
    if (first.jobComplete !== false) n += BigQuery.mergeSchemaWithRows_(first.schema as never, (first.rows ?? []) as never[], { wrapIntegers: false, parseJSON: false }).length;
    while (pending) {
      const got: Page = await pending;
      if (got[2].jobComplete !== false) token = got[2].pageToken;
      pending = got[2].jobComplete === false || token ? page(token) : undefined;
      n += got[0].length;
    }
  } else {
    const base = cfg.api_endpoint!;
    const headers = { authorization: `Bearer ${cfg.token}`, 'content-type': 'application/json' };
    const post = await fetch(`${base}/api/2.0/sql/statements`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ statement: `SELECT * FROM ${src.table}`, warehouse_id: warehouseId(cfg.http_path!), catalog: cfg.catalog, schema: cfg.schema, disposition: 'INLINE', format: 'JSON_ARRAY', wait_timeout: '10s' }),
    });
    type Chunk = { data_array?: unknown[]; next_chunk_internal_link?: string };
    let chunk = ((await post.json()) as { result?: Chunk }).result;
    while (chunk) {
      // The next chunk is requested before this one is counted, as the connector does.
      const next = chunk.next_chunk_internal_link;
      const pending = next ? fetch(`${base}${next}`, { headers }).then((r) => r.json() as Promise<Chunk>) : undefined;
      n += chunk.data_array?.length ?? 0;
      chunk = pending ? await pending : undefined;
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { rows: n, seconds, stored: n };
}
