/**
 * Sync rows per cloud source added in issue 16 — BigQuery and Databricks, each through its REST
 * stand-in answering from SQLite — next to the bare client read of the same stand-in table and
 * the store's floor over the same rows, in the same run; the ratio is against the slower of the
 * two (sync-floor.ts; goal ≥ 0.7). The stand-ins run in this process; every case in its own
 * process; best of BENCH_REPEATS (default 2). Store: SQLite.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBigQueryFixture } from '../test/bigquery-standin/standin-fixture.js';
import { createDatabricksFixture } from '../test/databricks-standin/standin-fixture.js';
import { PAGE_ROWS } from './cloud-sync-cases.js';
import { sourceSyncRows, type SourceSyncBench } from './sync-floor.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { BASE_MS, TABLE, type SyncCaseArgs } from './warehouse-sync-cases.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'cloud-sync-cases.ts');

/** The bench table's rows, generated inside SQLite (seconds, not minutes). */
const fill = (rows: number) => `WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ${rows - 1})
  INSERT INTO ${TABLE} SELECT i, 'event_' || (i % 7), ${BASE_MS} + i * 1000, 'user-' || (i % 5000), '/p/' || (i % 97), 'plan-' || (i % 3), i * 0.5 FROM c`;

export const bench: BenchModule = {
  title: 'cloud source sync: BigQuery and Databricks stand-ins vs their bare client reads and the store floor',
  run: async (ctx: BenchContext) => {
    const rows = Math.max(20_000, Math.round(200_000 * ctx.scale));
    const repeats = Math.max(1, Number(process.env.BENCH_REPEATS ?? '2'));
    const bq = await createBigQueryFixture({ pageRows: PAGE_ROWS, maxWaitMs: 10_000 });
    const dbx = await createDatabricksFixture({ chunkRows: PAGE_ROWS, maxWaitMs: 10_000 });
    const out: BenchRow[] = [];
    try {
      bq.createTable(TABLE, [
        { name: 'id', type: 'INTEGER', mode: 'REQUIRED' },
        { name: 'event', type: 'STRING', mode: 'REQUIRED' },
        { name: 'ts', type: 'INTEGER', mode: 'REQUIRED' },
        { name: 'user_id', type: 'STRING' },
        { name: 'url', type: 'STRING' },
        { name: 'plan', type: 'STRING' },
        { name: 'amount', type: 'FLOAT' },
      ]);
      bq.db.exec(fill(rows));
      dbx.createTable(TABLE, [
        { name: 'id', type: 'BIGINT', notNull: true },
        { name: 'event', type: 'STRING', notNull: true },
        { name: 'ts', type: 'BIGINT', notNull: true },
        { name: 'user_id', type: 'STRING' },
        { name: 'url', type: 'STRING' },
        { name: 'plan', type: 'STRING' },
        { name: 'amount', type: 'DOUBLE' },
      ]);
      dbx.db.exec(fill(rows));
      const sources: { label: string; source: SyncCaseArgs['source'] }[] = [
        { label: 'BigQuery (stand-in)', source: { type: 'bigquery', config: bq.sourceConfig(), table: `analytics.${TABLE}` } },
        { label: 'Databricks (stand-in)', source: { type: 'databricks', config: dbx.sourceConfig(), table: `analytics.${TABLE}` } },
      ];
      const b: SourceSyncBench = { section: 'cloud source sync', cases: CASES, rows, repeats, tmpDir: ctx.tmpDir, log: ctx.log, readNote: `raw client, ${PAGE_ROWS}-row pages, one ahead` };
      for (const s of sources) out.push(...(await sourceSyncRows(b, s.label, s.source)));
    } finally {
      await bq.close();
      await dbx.close();
    }
    return out;
  },
};
