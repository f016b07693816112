/**
 * Migration throughput (issue 6): a 30-day Amplitude migration of 1M events (× BENCH_SCALE)
 * through the Export API stand-in — download, unzip, gunzip, count pass, parse, transform,
 * validate, store, profiles — beside the store's shared floor (floors.ts) for the same events measured
 * in the same run. A 10× smaller migration with the same volume per day (3 days instead of 30)
 * shows whether peak RSS stays flat as the data grows: what a worker holds at once is bounded by
 * batch size × decode-ahead × concurrency, not by the volume migrated.
 * The stand-in runs in this (parent) process with its archives built before any timer starts.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AmplitudeDataset, type DatasetOptions } from '../test/amplitude-standin/dataset.js';
import { startAmplitudeStandin } from '../test/amplitude-standin/server.js';
import { windowOf } from '../connectors/amplitude/export-client.js';
import { FLOOR_NAMES } from './floors.js';
import { runIsolated } from './isolated.js';
import type { MigrationCaseArgs, MigrationCaseResult } from './migration-cases.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { pgReachable } from './pg-reachable.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'migration-cases.ts');
const BATCH = 5000;
/** Main-isolate heap cap of the capped run (decoder threads cap their own heaps). */
const HEAP_CAP_MB = 160;

export const bench: BenchModule = {
  title: 'migration: Amplitude export → events and profiles, vs the store floor',
  run: async (ctx) => {
    const n = Math.max(30_000, Math.round(1_000_000 * ctx.scale));
    const big: DatasetOptions = { seed: 2024, startDay: '2024-01-01', days: 30, totalEvents: n, users: Math.max(1000, Math.round(n / 50)) };
    // As many days as a worker migrates at once (MIGRATION_DAY_CONCURRENCY's default), so both runs
    // have the same days in flight and their peak RSS differs by the data's size alone; its days
    // are smaller (25k events against 33k), which if anything lowers its peak.
    const small: DatasetOptions = { ...big, seed: 2025, days: 4, totalEvents: Math.round(n / 10), users: Math.max(100, Math.round(n / 500)) };
    const apiKey = 'bench-key';
    const apiSecret = 'bench-secret';
    const standin = await startAmplitudeStandin({ dataset: new AmplitudeDataset(big), apiKey, apiSecret });
    const standinSmall = await startAmplitudeStandin({ dataset: new AmplitudeDataset(small), apiKey, apiSecret });
    try {
      ctx.log('migration: building the stand-in archives (untimed)');
      await standin.prebuild(new AmplitudeDataset(big).days().map((d) => windowOf(d)));
      await standinSmall.prebuild(new AmplitudeDataset(small).days().map((d) => windowOf(d)));
      const rows: BenchRow[] = [];
      rows.push(...(await section(ctx, 'sqlite', big, small, standin.url, standinSmall.url)));
      if (await pgReachable(ctx.pgUrl)) rows.push(...(await section(ctx, 'postgres', big, small, standin.url, standinSmall.url)));
      else ctx.log('migration: Postgres not reachable, skipping its rows');
      return rows;
    } finally {
      await standin.close();
      await standinSmall.close();
    }
  },
};

/** Floor, migration and a 10× smaller migration (served by its own stand-in) on one database. */
async function section(ctx: BenchContext, kind: 'sqlite' | 'postgres', big: DatasetOptions, small: DatasetOptions, bigUrl: string, smallUrl: string): Promise<BenchRow[]> {
  let fileNo = 0;
  const args = (dataset: DatasetOptions, standinUrl: string): MigrationCaseArgs => ({
    kind,
    target: kind === 'sqlite' ? path.join(ctx.tmpDir, `migration-${kind}-${++fileNo}.sqlite`) : ctx.pgUrl!,
    dataset,
    standinUrl,
    redisUrl: ctx.redisUrl,
    tmpDir: ctx.tmpDir,
    batch: BATCH,
  });
  const run = async (name: string, fn: 'floor' | 'migration' | 'capped', dataset: DatasetOptions, url: string) => {
    ctx.log(`migration ${kind}: ${name} (${dataset.totalEvents.toLocaleString('en-US')} events)`);
    const { result, peakRssMb } =
      fn === 'capped'
        ? await runIsolated<MigrationCaseResult>(CASES, 'migration', args(dataset, url), { heapMb: HEAP_CAP_MB })
        : await runIsolated<MigrationCaseResult>(CASES, fn, args(dataset, url), { as: fn === 'floor' ? 'web' : 'worker' });
    if (result.events !== dataset.totalEvents) throw new Error(`${name}: measured ${result.events} of ${dataset.totalEvents}`);
    if (result.stored !== dataset.totalEvents) throw new Error(`${name}: stored ${result.stored} of ${dataset.totalEvents}`);
    return { ...result, rate: result.events / result.seconds, peakRssMb };
  };
  const floor = await run('floor', 'floor', big, bigUrl);
  const full = await run('migration', 'migration', big, bigUrl);
  const smaller = await run('migration, 1/10 of the data', 'migration', small, smallUrl);
  // V8 collects lazily, so an uncapped heap grows with the work done; capped, the same run must
  // still complete, which shows what it actually retains is bounded.
  const capped = kind === 'sqlite' ? await run(`migration, heap capped at ${HEAP_CAP_MB} MB`, 'capped', big, bigUrl) : undefined;
  const s = `migration ${kind}`;
  const cappedRow: BenchRow[] = capped
    ? [
        {
          section: s,
          name: `Amplitude migration, main heap capped at ${HEAP_CAP_MB} MB`,
          unit: 'events/s',
          value: capped.rate,
          ratio: `${(capped.rate / floor.rate).toFixed(2)} of floor`,
          peakRssMb: capped.peakRssMb,
          note: `${big.totalEvents} events with --max-old-space-size=${HEAP_CAP_MB}: completes, RSS bounded`,
        },
      ]
    : [];
  return [
    { section: s, name: `floor (${FLOOR_NAMES[kind]})`, unit: 'events/s', value: floor.rate, peakRssMb: floor.peakRssMb, note: `${big.totalEvents} events, the migration's own rows` },
    {
      section: s,
      name: 'Amplitude migration end to end',
      unit: 'events/s',
      value: full.rate,
      ratio: `${(full.rate / floor.rate).toFixed(2)} of floor`,
      peakRssMb: full.peakRssMb,
      note: `${big.totalEvents} events, ${full.profiles} profiles, ${full.seconds.toFixed(1)} s (count pass ${full.countSeconds?.toFixed(1)} s)`,
    },
    {
      section: s,
      name: 'Amplitude migration, 1/10 of the data',
      unit: 'events/s',
      value: smaller.rate,
      ratio: `${(smaller.rate / floor.rate).toFixed(2)} of floor`,
      peakRssMb: smaller.peakRssMb,
      note: `${small.totalEvents} events over ${small.days} days (as many in flight as above): peak RSS vs the row above`,
    },
    ...cappedRow,
  ];
}
