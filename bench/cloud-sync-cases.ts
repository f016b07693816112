/**
 * Cases of bench/cloud-sync.bench.ts, each run in its own process against a stand-in the bench
 * started (test/bigquery-standin, test/databricks-standin): (a) the bare client read — every row
 * of the table through the raw API client (BigQuery: @google-cloud/bigquery's createQueryStream,
 * i.e. jobs.query + getQueryResults pages; Databricks: the Statement Execution API's statement and
 * chunk links over fetch), counted and dropped — and (b) an events sync of the same table
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
    // No maxResults: on a stream it caps the total; the stand-in's page size is PAGE_ROWS.
    const stream = bq.createQueryStream({ query: `SELECT * FROM ${src.table}`, location: cfg.location });
    for await (const _row of stream) n += 1;
  } else {
    const base = cfg.api_endpoint!;
    const headers = { authorization: `Bearer ${cfg.token}`, 'content-type': 'application/json' };
    const post = await fetch(`${base}/api/2.0/sql/statements`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ statement: `SELECT * FROM ${src.table}`, warehouse_id: warehouseId(cfg.http_path!), catalog: cfg.catalog, schema: cfg.schema, disposition: 'INLINE', format: 'JSON_ARRAY', wait_timeout: '10s' }),
    });
    let chunk = ((await post.json()) as { result?: { data_array?: unknown[]; next_chunk_internal_link?: string } }).result;
    while (chunk) {
      n += chunk.data_array?.length ?? 0;
      const next = chunk.next_chunk_internal_link;
      chunk = next ? ((await (await fetch(`${base}${next}`, { headers })).json()) as typeof chunk) : undefined;
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { rows: n, seconds, stored: n };
}
