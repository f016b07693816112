/**
 * Snowflake source (issue 5): rows/s through the real snowflake-sdk against the protocol stand-in
 * (test/snowflake-standin, in its own process, chunked JSON results), (b) reading only and (c) a
 * whole events sync into SQLite, beside (a) the store's shared floor (floors.ts) over the very
 * events (c) stored; (c)'s ratio is against the slower of (a) and (b) (sync-floor.ts). Each
 * measurement runs in its own process (peak RSS). The stand-in is local and does
 * real work per chunk (SQLite read, JSON, gzip), so these are the connector's costs plus a fast
 * "warehouse", not a Snowflake latency figure.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSnowflakeFixture } from '../test/snowflake-standin/standin-fixture.js';
import { FLOOR_NAMES } from './floors.js';
import { runIsolated } from './isolated.js';
import type { SnowflakeCaseArgs, SnowflakeCaseResult } from './snowflake-sync-cases.js';
import { syncRatio } from './sync-floor.js';
import type { BenchModule, BenchRow } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'snowflake-sync-cases.ts');

export const bench: BenchModule = {
  title: 'snowflake source: snowflake-sdk through the stand-in, read and full sync',
  run: async (ctx) => {
    const rows = Math.max(5000, Math.round(100_000 * ctx.scale));
    const fx = await createSnowflakeFixture({ childProcess: true, inlineRows: 1000, chunkRows: 10_000 });
    try {
      fx.db.exec(`CREATE TABLE bench_events ("id" NUMBER(38,0) NOT NULL, "event" VARCHAR NOT NULL, "time" TIMESTAMP_NTZ NOT NULL,
        "user_id" VARCHAR, "insert_id" VARCHAR, "plan" VARCHAR, "amount" FLOAT, "props" VARIANT)`);
      const ins = fx.db.prepare('INSERT INTO bench_events VALUES (?,?,?,?,?,?,?,?)');
      const t0 = Date.UTC(2024, 0, 1);
      fx.db.transaction(() => {
        for (let i = 0; i < rows; i++) {
          ins.run(i, `event_${i % 25}`, new Date(t0 + i * 1000).toISOString(), `user_${i % 10_000}`, `ins-${i}`, i % 3 ? 'pro' : 'free', (i % 1000) / 10, JSON.stringify({ browser: 'firefox', os: 'linux', screen: i % 7, campaign: `c${i % 50}` }));
        }
      })();
      const args: SnowflakeCaseArgs = { rows, sourceConfig: fx.sourceConfig(), serverConfig: fx.serverConfig, table: 'bench_events' };

      ctx.log(`snowflake: (b) read through snowflake-sdk, ${rows} rows`);
      const read = await runIsolated<SnowflakeCaseResult>(CASES, 'readOnly', args, { as: 'web' });
      if (read.result.rows !== rows) throw new Error(`read ${read.result.rows} of ${rows} rows`);

      ctx.log(`snowflake: (c) events sync into SQLite, ${rows} rows`);
      const storePath = path.join(ctx.tmpDir, 'sf-sync.sqlite');
      const synced = await runIsolated<SnowflakeCaseResult>(CASES, 'sync', { ...args, storePath });
      if (synced.result.stored !== rows) throw new Error(`sync stored ${synced.result.stored} of ${rows} events`);

      ctx.log(`snowflake: (a) floor over the ${rows} events the sync stored`);
      const floor = await runIsolated<SnowflakeCaseResult>(CASES, 'floor', { ...args, storePath, floorPath: path.join(ctx.tmpDir, 'sf-floor.sqlite') }, { as: 'web' });
      if (floor.result.stored !== rows) throw new Error(`floor stored ${floor.result.stored} of ${rows} events`);

      const section = 'snowflake source';
      const floorRate = floor.result.rows / floor.result.seconds;
      const readRate = read.result.rows / read.result.seconds;
      const syncRate = rows / synced.result.seconds;
      const out: BenchRow[] = [
        { section, name: `(a) floor (${FLOOR_NAMES.sqlite})`, unit: 'events/s', value: floorRate, peakRssMb: floor.peakRssMb, note: "the events (c) stored" },
        { section, name: '(b) read via snowflake-sdk (stand-in)', unit: 'rows/s', value: readRate, ratio: `${(readRate / floorRate).toFixed(2)} of (a)`, peakRssMb: read.peakRssMb, note: `${rows} rows, 10k-row chunks` },
        { section, name: '(c) events sync → SQLite store', unit: 'rows/s', value: syncRate, ratio: syncRatio(syncRate, floorRate, readRate), peakRssMb: synced.peakRssMb, note: 'describe+count+read+map+write; goal ≥ 0.7' },
      ];
      return out;
    } finally {
      await fx.close();
    }
  },
};
