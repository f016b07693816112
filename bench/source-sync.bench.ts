/**
 * Sync rows per client-server source added in issue 16 — MySQL/MariaDB and Redshift (its flavor
 * of the PostgreSQL connector, against PostgreSQL) — each next to its source's bare client read
 * of the same table and the store's floor over the same rows, in the same run; the ratio is
 * against the slower of the two (sync-floor.ts; goal ≥ 0.7). Store: SQLite. Every case in its
 * own process; best of BENCH_REPEATS (default 2). A source that is not reachable is skipped with
 * a log line.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2';
import { FLOOR_NAMES } from './floors.js';
import { runIsolated } from './isolated.js';
import { pgReachable } from './pg-reachable.js';
import { buildMysqlSource, buildPostgresSource, dropMysqlDatabase, dropPostgresSchema } from './source-sync-cases.js';
import { syncRatio } from './sync-floor.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import type { SyncCaseArgs, SyncCaseResult } from './warehouse-sync-cases.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'source-sync-cases.ts');
const MYSQL_URL = process.env.BENCH_MYSQL_URL ?? process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';

async function mysqlReachable(url: string): Promise<boolean> {
  try {
    const c = mysql.createConnection({ uri: url, connectTimeout: 2000 }).promise();
    await c.query('SELECT 1');
    await c.end();
    return true;
  } catch {
    return false;
  }
}

type M = { rate: number; peakRssMb: number };

export const bench: BenchModule = {
  title: 'source sync: MySQL and Redshift-mode sources vs their bare client reads and the store floor',
  run: async (ctx: BenchContext) => {
    const rows = Math.max(20_000, Math.round(500_000 * ctx.scale));
    const repeats = Math.max(1, Number(process.env.BENCH_REPEATS ?? '2'));
    const k = `${Math.round(rows / 1000)}k`;
    const sources: { label: string; source: SyncCaseArgs['source']; drop: () => Promise<void> }[] = [];
    if (await mysqlReachable(MYSQL_URL)) {
      const { url, database } = await buildMysqlSource(MYSQL_URL, rows);
      sources.push({ label: 'MySQL (MariaDB)', source: { type: 'mysql', url }, drop: () => dropMysqlDatabase(MYSQL_URL, database) });
    } else ctx.log('source sync: MySQL not reachable, skipping its rows');
    if (await pgReachable(ctx.pgUrl)) {
      const schema = await buildPostgresSource(ctx.pgUrl!, rows);
      sources.push({ label: 'Redshift-mode PostgreSQL', source: { type: 'redshift', url: ctx.pgUrl!, schema }, drop: () => dropPostgresSchema(ctx.pgUrl!, schema) });
    } else ctx.log('source sync: Postgres not reachable, skipping the Redshift-mode rows');

    let n = 0;
    const measure = async (name: string, fn: 'bareRead' | 'sync' | 'floor', source: SyncCaseArgs['source']): Promise<M> => {
      ctx.log(`source sync: ${name}`);
      const args: SyncCaseArgs = { rows, store: path.join(ctx.tmpDir, `src-sync-store-${++n}.sqlite`), source };
      const { result, peakRssMb } = await runIsolated<SyncCaseResult>(CASES, fn, args);
      if (result.stored !== rows) throw new Error(`${name}: ${result.stored} of ${rows} rows`);
      return { rate: result.rows / result.seconds, peakRssMb };
    };
    const best = (x: M | undefined, y: M) => (x && x.rate >= y.rate ? x : y);
    const out: BenchRow[] = [];
    const section = 'source sync';
    try {
      for (const s of sources) {
        let bare: M | undefined, sync: M | undefined, floor: M | undefined;
        for (let r = 0; r < repeats; r++) {
          floor = best(floor, await measure(`${s.label}: store floor, ${k} rows`, 'floor', s.source));
          bare = best(bare, await measure(`${s.label}: bare client read, ${k} rows`, 'bareRead', s.source));
          sync = best(sync, await measure(`${s.label}: sync ${k} rows → SQLite store`, 'sync', s.source));
        }
        out.push(
          { section, name: `${s.label}: store floor (${FLOOR_NAMES.sqlite}), ${k} rows`, unit: 'events/s', value: floor!.rate, peakRssMb: floor!.peakRssMb, note: `the sync's own events; best of ${repeats}` },
          { section, name: `${s.label}: bare client read, ${k} rows`, unit: 'rows/s', value: bare!.rate, peakRssMb: bare!.peakRssMb, note: `every row streamed, nothing else; best of ${repeats}` },
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
      for (const s of sources) await s.drop().catch(() => {});
    }
    return out;
  },
};
