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
import { FLOOR_NAMES } from './floors.js';
import { runIsolated } from './isolated.js';
import { syncRatio } from './sync-floor.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { BASE_MS, TABLE, type SyncCaseArgs, type SyncCaseResult } from './warehouse-sync-cases.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'cloud-sync-cases.ts');

/** The bench table's rows, generated inside SQLite (seconds, not minutes). */
const fill = (rows: number) => `WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ${rows - 1})
  INSERT INTO ${TABLE} SELECT i, 'event_' || (i % 7), ${BASE_MS} + i * 1000, 'user-' || (i % 5000), '/p/' || (i % 97), 'plan-' || (i % 3), i * 0.5 FROM c`;

type M = { rate: number; peakRssMb: number };

export const bench: BenchModule = {
  title: 'cloud source sync: BigQuery and Databricks stand-ins vs their bare client reads and the store floor',
  run: async (ctx: BenchContext) => {
    const rows = Math.max(20_000, Math.round(200_000 * ctx.scale));
    const repeats = Math.max(1, Number(process.env.BENCH_REPEATS ?? '2'));
    const k = `${Math.round(rows / 1000)}k`;
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
      let n = 0;
      const measure = async (name: string, fn: 'bareRead' | 'sync' | 'floor', source: SyncCaseArgs['source']): Promise<M> => {
        ctx.log(`cloud sync: ${name}`);
        const args: SyncCaseArgs = { rows, store: path.join(ctx.tmpDir, `cloud-sync-store-${++n}.sqlite`), source };
        const { result, peakRssMb } = await runIsolated<SyncCaseResult>(CASES, fn, args);
        if (result.stored !== rows) throw new Error(`${name}: ${result.stored} of ${rows} rows`);
        return { rate: result.rows / result.seconds, peakRssMb };
      };
      const best = (x: M | undefined, y: M) => (x && x.rate >= y.rate ? x : y);
      const section = 'cloud source sync';
      for (const s of sources) {
        let bare: M | undefined, sync: M | undefined, floor: M | undefined;
        for (let r = 0; r < repeats; r++) {
          floor = best(floor, await measure(`${s.label}: store floor, ${k} rows`, 'floor', s.source));
          bare = best(bare, await measure(`${s.label}: bare client read, ${k} rows`, 'bareRead', s.source));
          sync = best(sync, await measure(`${s.label}: sync ${k} rows → SQLite store`, 'sync', s.source));
        }
        out.push(
          { section, name: `${s.label}: store floor (${FLOOR_NAMES.sqlite}), ${k} rows`, unit: 'events/s', value: floor!.rate, peakRssMb: floor!.peakRssMb, note: `the sync's own events; best of ${repeats}` },
          { section, name: `${s.label}: bare client read, ${k} rows`, unit: 'rows/s', value: bare!.rate, peakRssMb: bare!.peakRssMb, note: `raw client, ${PAGE_ROWS}-row pages; best of ${repeats}` },
          {
            section,
            name: `${s.label}: sync ${k}-row table → SQLite`,
            unit: 'rows/s',
            value: sync!.rate,
            ratio: syncRatio(sync!.rate, floor!.rate, bare!.rate),
            peakRssMb: sync!.peakRssMb,
            note: `goal ≥ 0.7; ${(sync!.rate / bare!.rate).toFixed(2)} of the bare read`,
          },
        );
      }
    } finally {
      await bq.close();
      await dbx.close();
    }
    return out;
  },
};
