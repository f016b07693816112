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
import { pgReachable } from './pg-reachable.js';
import { buildMysqlSource, buildPostgresSource, dropMysqlDatabase, dropPostgresSchema } from './source-sync-cases.js';
import { sourceSyncRows, type SourceSyncBench } from './sync-floor.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import type { SyncCaseArgs } from './warehouse-sync-cases.js';

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

export const bench: BenchModule = {
  title: 'source sync: MySQL and Redshift-mode sources vs their bare client reads and the store floor',
  run: async (ctx: BenchContext) => {
    const rows = Math.max(20_000, Math.round(500_000 * ctx.scale));
    const repeats = Math.max(1, Number(process.env.BENCH_REPEATS ?? '2'));
    const sources: { label: string; source: SyncCaseArgs['source']; drop: () => Promise<void> }[] = [];
    if (await mysqlReachable(MYSQL_URL)) {
      const { url, database } = await buildMysqlSource(MYSQL_URL, rows);
      sources.push({ label: 'MySQL (MariaDB)', source: { type: 'mysql', url }, drop: () => dropMysqlDatabase(MYSQL_URL, database) });
    } else ctx.log('source sync: MySQL not reachable, skipping its rows');
    if (await pgReachable(ctx.pgUrl)) {
      const schema = await buildPostgresSource(ctx.pgUrl!, rows);
      sources.push({ label: 'Redshift-mode PostgreSQL', source: { type: 'redshift', url: ctx.pgUrl!, schema }, drop: () => dropPostgresSchema(ctx.pgUrl!, schema) });
    } else ctx.log('source sync: Postgres not reachable, skipping the Redshift-mode rows');

    const b: SourceSyncBench = { section: 'source sync', cases: CASES, rows, repeats, tmpDir: ctx.tmpDir, log: ctx.log, readNote: 'every row streamed, nothing else' };
    const out: BenchRow[] = [];
    try {
      for (const s of sources) out.push(...(await sourceSyncRows(b, s.label, s.source)));
    } finally {
      for (const s of sources) await s.drop().catch(() => {});
    }
    return out;
  },
};
