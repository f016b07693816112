/**
 * Identity (issue 12): (1) `unique` segmentation latency over many events, devices and days per
 * store — sizes from BENCH_UNIQUE_EVENTS / BENCH_UNIQUE_DEVICES / BENCH_UNIQUE_DAYS (defaults
 * 1M / 100k / 30, times BENCH_SCALE). /import with the identity rules on vs off is measured
 * from outside, on every store, in service.bench.ts.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { UniqueArgs, UniqueResult } from './identity-cases.js';
import { runIsolated } from './isolated.js';
import { pgReachable } from './pg-reachable.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'identity-cases.ts');

const sized = (name: string, def: number, scale: number) => Math.max(1, Math.round(Number(process.env[name] ?? def) * scale));

async function unique(ctx: BenchContext, kind: 'sqlite' | 'postgres'): Promise<BenchRow[]> {
  const events = sized('BENCH_UNIQUE_EVENTS', 1_000_000, ctx.scale);
  const devices = sized('BENCH_UNIQUE_DEVICES', 100_000, ctx.scale);
  const days = Math.max(1, Number(process.env.BENCH_UNIQUE_DAYS ?? 30));
  const target = kind === 'sqlite' ? path.join(ctx.tmpDir, 'identity-unique.sqlite') : ctx.pgUrl!;
  ctx.log(`identity ${kind}: seeding ${events.toLocaleString('en-US')} events, ${devices.toLocaleString('en-US')} devices, ${days} days`);
  const args: UniqueArgs = { kind, target, events, devices, days, redisUrl: ctx.redisUrl, repeats: 3 };
  const { result, peakRssMb } = await runIsolated<UniqueResult>(CASES, 'uniqueSegmentation', args, { as: 'web' });
  const section = `identity ${kind}`;
  const size = `${events.toLocaleString('en-US')} events, ${devices.toLocaleString('en-US')} devices, ${days} days by day`;
  return [
    { section, name: `segmentation type=unique, ${size}`, unit: 'ms', value: result.uniqueMs, peakRssMb, note: `best of 3; sum of daily uniques ${result.uniqueTotal}; seeded in ${result.seedSeconds.toFixed(1)} s` },
    { section, name: `segmentation type=general, same data`, unit: 'ms', value: result.generalMs, ratio: `${(result.uniqueMs / result.generalMs).toFixed(2)}x general`, note: 'reference' },
  ];
}

export const bench: BenchModule = {
  title: 'identity: unique segmentation latency (/import with identity on vs off: service.bench.ts)',
  run: async (ctx) => {
    const rows: BenchRow[] = [];
    const kinds: ('sqlite' | 'postgres')[] = (await pgReachable(ctx.pgUrl)) ? ['sqlite', 'postgres'] : ['sqlite'];
    for (const kind of kinds) {
      rows.push(...(await unique(ctx, kind)));
    }
    return rows;
  },
};
