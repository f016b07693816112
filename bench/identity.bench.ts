/**
 * Identity (issue 12): (1) `unique` segmentation latency over many events, devices and days per
 * store — sizes from BENCH_UNIQUE_EVENTS / BENCH_UNIQUE_DEVICES / BENCH_UNIQUE_DAYS (defaults
 * 1M / 100k / 30, times BENCH_SCALE); (2) `/import` throughput of events carrying
 * $device_id/$user_id with the identity rules on (simplified project: distinct ids derived,
 * devices recorded, links written) vs off (original project), same events, best of
 * BENCH_REPEATS. The identity cost should stay within 5 % of /import's rate.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CaseArgs, CaseResult } from './ingest-cases.js';
import type { UniqueArgs, UniqueResult } from './identity-cases.js';
import { runIsolated } from './isolated.js';
import { pgReachable } from './pg-reachable.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const INGEST = path.join(here, 'ingest-cases.ts');
const CASES = path.join(here, 'identity-cases.ts');

const sized = (name: string, def: number, scale: number) => Math.max(1, Math.round(Number(process.env[name] ?? def) * scale));

async function unique(ctx: BenchContext, kind: 'sqlite' | 'postgres'): Promise<BenchRow[]> {
  const events = sized('BENCH_UNIQUE_EVENTS', 1_000_000, ctx.scale);
  const devices = sized('BENCH_UNIQUE_DEVICES', 100_000, ctx.scale);
  const days = Math.max(1, Number(process.env.BENCH_UNIQUE_DAYS ?? 30));
  const target = kind === 'sqlite' ? path.join(ctx.tmpDir, 'identity-unique.sqlite') : ctx.pgUrl!;
  ctx.log(`identity ${kind}: seeding ${events.toLocaleString('en-US')} events, ${devices.toLocaleString('en-US')} devices, ${days} days`);
  const args: UniqueArgs = { kind, target, events, devices, days, redisUrl: ctx.redisUrl, repeats: 3 };
  const { result, peakRssMb } = await runIsolated<UniqueResult>(CASES, 'uniqueSegmentation', args);
  const section = `identity ${kind}`;
  const size = `${events.toLocaleString('en-US')} events, ${devices.toLocaleString('en-US')} devices, ${days} days by day`;
  return [
    { section, name: `segmentation type=unique, ${size}`, unit: 'ms', value: result.uniqueMs, peakRssMb, note: `best of 3; sum of daily uniques ${result.uniqueTotal}; seeded in ${result.seedSeconds.toFixed(1)} s` },
    { section, name: `segmentation type=general, same data`, unit: 'ms', value: result.generalMs, ratio: `${(result.uniqueMs / result.generalMs).toFixed(2)}x general`, note: 'reference' },
  ];
}

async function importOnOff(ctx: BenchContext, kind: 'sqlite' | 'postgres'): Promise<BenchRow[]> {
  const n = Math.max(4000, Math.round((100_000 * ctx.scale) / 2000) * 2000);
  const repeats = Math.max(1, Number(process.env.BENCH_REPEATS ?? '2'));
  let fileNo = 0;
  const measure = async (idMerge: 'simplified' | 'original') => {
    const target = kind === 'sqlite' ? path.join(ctx.tmpDir, `identity-import-${++fileNo}.sqlite`) : ctx.pgUrl!;
    ctx.log(`identity ${kind}: /import with identity ${idMerge === 'simplified' ? 'on' : 'off'} (${n} events)`);
    const args: CaseArgs = { kind, n, target, clients: 4, redisUrl: ctx.redisUrl, identity: true, idMerge };
    const { result } = await runIsolated<CaseResult>(INGEST, 'httpImport', args);
    if (result.stored !== n) throw new Error(`identity ${idMerge}: stored ${result.stored} of ${n} events`);
    return result.events / result.seconds;
  };
  let on = 0;
  let off = 0;
  // Interleaved, best kept: the machine is shared and noisy.
  for (let r = 0; r < repeats; r++) {
    off = Math.max(off, await measure('original'));
    on = Math.max(on, await measure('simplified'));
  }
  const section = `identity ${kind}`;
  return [
    { section, name: `POST /import, identity off (original project), ${n} events`, unit: 'events/s', value: off, note: `events carry $device_id/$user_id; best of ${repeats}` },
    { section, name: `POST /import, identity on (simplified project)`, unit: 'events/s', value: on, ratio: `${(on / off).toFixed(2)} of off`, note: 'distinct ids derived, devices recorded, links written' },
  ];
}

export const bench: BenchModule = {
  title: 'identity: unique segmentation latency, /import with identity on vs off',
  run: async (ctx) => {
    const rows: BenchRow[] = [];
    const kinds: ('sqlite' | 'postgres')[] = (await pgReachable(ctx.pgUrl)) ? ['sqlite', 'postgres'] : ['sqlite'];
    for (const kind of kinds) {
      rows.push(...(await importOnOff(ctx, kind)));
      rows.push(...(await unique(ctx, kind)));
    }
    return rows;
  },
};
