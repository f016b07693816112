/**
 * Warehouse sync throughput (issue 4), in the same run as its floor: (a) the store's shared floor
 * (floors.ts) over events shaped like a sync's output, (b) an events sync of a 1M-row SQLite table,
 * (c) the same for 100k rows (peak RSS must match (b): memory flat), (d) from a 1M-row Postgres
 * table; (g)/(h) a mirror run over those tables with 1 % of the rows changed, against (b)/(c)'s time. Store: SQLite (the default); with Postgres reachable, also (e)/(f) floor and sync into a
 * Postgres store. Every case runs in its own process; best of BENCH_REPEATS (default 2).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import crypto from 'node:crypto';
import { FLOOR_NAMES } from './floors.js';
import { runIsolated } from './isolated.js';
import {
  buildPostgresSource,
  buildSqliteSource,
  dropPostgresSchema,
  type SyncCaseArgs,
  type SyncCaseResult,
} from './warehouse-sync-cases.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { pgReachable } from './pg-reachable.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'warehouse-sync-cases.ts');

type M = { rate: number; peakRssMb: number };

export const bench: BenchModule = {
  title: 'warehouse sync: floor vs sync from SQLite and Postgres sources',
  run: async (ctx: BenchContext) => {
    const big = Math.max(20_000, Math.round(1_000_000 * ctx.scale));
    const small = Math.max(2_000, Math.round(big / 10));
    const repeats = Math.max(1, Number(process.env.BENCH_REPEATS ?? '2'));
    const hasPg = await pgReachable(ctx.pgUrl);
    let n = 0;
    const storeFile = () => path.join(ctx.tmpDir, `wh-store-${++n}.sqlite`);
    const schemas: string[] = [];
    const pgStore = () => {
      const s = `whstore_${crypto.randomBytes(4).toString('hex')}`;
      schemas.push(s);
      return { store: ctx.pgUrl!, storeSchema: s };
    };

    ctx.log(`warehouse: building sources (${big.toLocaleString('en-US')} and ${small.toLocaleString('en-US')} rows)`);
    const bigFile = path.join(ctx.tmpDir, 'wh-src-big.sqlite');
    const smallFile = path.join(ctx.tmpDir, 'wh-src-small.sqlite');
    buildSqliteSource(bigFile, big);
    buildSqliteSource(smallFile, small);
    const pgSchema = hasPg ? await buildPostgresSource(ctx.pgUrl!, big) : undefined;
    if (pgSchema) schemas.push(pgSchema);

    const k = (rows: number) => (rows >= 1_000_000 ? `${rows / 1_000_000}M` : `${Math.round(rows / 1000)}k`);
    const measure = async (name: string, fn: 'floor' | 'sync' | 'mirror', args: SyncCaseArgs): Promise<M> => {
      ctx.log(`warehouse: ${name}`);
      const { result, peakRssMb } = await runIsolated<SyncCaseResult & { changed?: number[] }>(CASES, fn, args, { as: fn === 'floor' ? 'web' : 'worker' });
      if (result.stored !== args.rows) throw new Error(`${name}: stored ${result.stored} of ${args.rows} events`);
      if (result.changed) ctx.log(`warehouse: ${name}: inserted/updated/deleted ${result.changed.join(' / ')}`);
      return { rate: result.rows / result.seconds, peakRssMb };
    };
    /** The mirror cases change their table: each gets a fresh copy. */
    const copyOf = (file: string) => {
      const copy = path.join(ctx.tmpDir, `wh-mirror-${++n}.sqlite`);
      fs.copyFileSync(file, copy);
      return copy;
    };
    const best = (x: M | undefined, y: M) => (x && x.rate >= y.rate ? x : y);
    const sqliteSrc = (file: string) => ({ type: 'sqlite' as const, path: file });
    const pgSrc = () => ({ type: 'postgres' as const, url: ctx.pgUrl!, schema: pgSchema! });

    let floor: M | undefined, syncBig: M | undefined, syncSmall: M | undefined, syncPg: M | undefined, mirrorBig: M | undefined, mirrorSmall: M | undefined;
    let pgFloor: M | undefined, pgSync: M | undefined;
    try {
      for (let r = 0; r < repeats; r++) {
        // Interleaved, so the floor and the syncs see the same machine load.
        floor = best(floor, await measure('(a) floor into the SQLite store', 'floor', { rows: big, store: storeFile(), source: sqliteSrc(bigFile) }));
        syncBig = best(syncBig, await measure(`(b) sync ${k(big)}-row SQLite table → SQLite store`, 'sync', { rows: big, store: storeFile(), source: sqliteSrc(bigFile) }));
        syncSmall = best(syncSmall, await measure(`(c) sync ${k(small)}-row SQLite table → SQLite store`, 'sync', { rows: small, store: storeFile(), source: sqliteSrc(smallFile) }));
        mirrorBig = best(mirrorBig, await measure(`(g) mirror ${k(big)}-row table, 1% changed`, 'mirror', { rows: big, store: storeFile(), source: sqliteSrc(copyOf(bigFile)) }));
        mirrorSmall = best(mirrorSmall, await measure(`(h) mirror ${k(small)}-row table, 1% changed`, 'mirror', { rows: small, store: storeFile(), source: sqliteSrc(copyOf(smallFile)) }));
        if (pgSchema) {
          syncPg = best(syncPg, await measure(`(d) sync ${k(big)}-row Postgres table → SQLite store`, 'sync', { rows: big, store: storeFile(), source: pgSrc() }));
          pgFloor = best(pgFloor, await measure('(e) floor into a Postgres store', 'floor', { rows: big, ...pgStore(), source: sqliteSrc(bigFile) }));
          pgSync = best(pgSync, await measure(`(f) sync ${k(big)}-row SQLite table → Postgres store`, 'sync', { rows: big, ...pgStore(), source: sqliteSrc(bigFile) }));
        }
      }
    } finally {
      for (const s of schemas) await dropPostgresSchema(ctx.pgUrl!, s).catch(() => {});
      fs.rmSync(bigFile, { force: true });
      fs.rmSync(smallFile, { force: true });
    }
    if (!floor || !syncBig || !syncSmall || !mirrorBig || !mirrorSmall) throw new Error('no measurement');
    const of = (x: M, base: M) => `${(x.rate / base.rate).toFixed(2)} of floor`;
    const section = 'warehouse sync';
    const rows: BenchRow[] = [
      { section, name: `(a) floor (${FLOOR_NAMES.sqlite}), SQLite store`, unit: 'events/s', value: floor.rate, peakRssMb: floor.peakRssMb, note: `${big} events shaped like a sync's, best of ${repeats}` },
      { section, name: `(b) sync ${k(big)}-row SQLite table → SQLite`, unit: 'rows/s', value: syncBig.rate, ratio: of(syncBig, floor), peakRssMb: syncBig.peakRssMb, note: 'target ≥ 0.7 of floor' },
      { section, name: `(c) sync ${k(small)}-row SQLite table → SQLite`, unit: 'rows/s', value: syncSmall.rate, ratio: of(syncSmall, floor), peakRssMb: syncSmall.peakRssMb, note: `RSS vs (b): memory flat as rows ×10` },
      // Rows read per second of the whole run; its time as a fraction of a full_sync of the same table is the point.
      { section, name: `(g) mirror run, ${k(big)}-row table, 1% changed`, unit: 'rows/s', value: mirrorBig.rate, ratio: `${(syncBig.rate / mirrorBig.rate).toFixed(2)} of (b)'s time`, peakRssMb: mirrorBig.peakRssMb, note: '0.25% added, 0.5% updated, 0.25% deleted; reads every row, writes the 1%' },
      { section, name: `(h) mirror run, ${k(small)}-row table, 1% changed`, unit: 'rows/s', value: mirrorSmall.rate, ratio: `${(syncSmall.rate / mirrorSmall.rate).toFixed(2)} of (c)'s time`, peakRssMb: mirrorSmall.peakRssMb, note: `RSS vs (g): memory flat as rows ×10` },
    ];
    if (syncPg && pgFloor && pgSync) {
      rows.push(
        { section, name: `(d) sync ${k(big)}-row Postgres table → SQLite`, unit: 'rows/s', value: syncPg.rate, ratio: of(syncPg, floor), peakRssMb: syncPg.peakRssMb },
        { section, name: `(e) floor (${FLOOR_NAMES.postgres}), Postgres store`, unit: 'events/s', value: pgFloor.rate, peakRssMb: pgFloor.peakRssMb },
        { section, name: `(f) sync ${k(big)}-row SQLite table → Postgres`, unit: 'rows/s', value: pgSync.rate, ratio: of(pgSync, pgFloor), peakRssMb: pgSync.peakRssMb },
      );
    } else ctx.log('warehouse: Postgres not reachable, skipping its rows');
    return rows;
  },
};
