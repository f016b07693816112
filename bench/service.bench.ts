/**
 * The headline rows (issue 17): `/import` into the service as users run it (`npm start`, real
 * logging, rate limiter on), driven from an outside client process, against the one floor of
 * each store (floors.ts) measured in the same run. Each pair runs BENCH_REPEATS times (default 5),
 * interleaved, and the table shows the median rate and the median of the per-pair ratios.
 * Then the identity rows: the same service with identity-carrying events, rules on vs off.
 */
import os from 'node:os';
import path from 'node:path';
import { measureCeiling } from './ceiling-cases.js';
import { clickhouseReachable } from './clickhouse-reachable.js';
import { FLOOR_NAMES, measureFloor, type StoreKind } from './floors.js';
import { pgReachable } from './pg-reachable.js';
import { BATCH, serviceImport, type ServiceArgs } from './service-cases.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function machineNote(): string {
  return `${os.cpus().length} cores, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`;
}

export function floorTarget(ctx: BenchContext, kind: StoreKind, tag: string): string {
  if (kind === 'sqlite') return path.join(ctx.tmpDir, `floor-${tag}-${Date.now()}-${Math.random().toString(36).slice(2)}.sqlite`);
  return kind === 'postgres' ? ctx.pgUrl! : ctx.clickhouseUrl!;
}

/** "<store> cpu X µs/event; " where the store server's CPU was read, else nothing. */
function storeCpuNote(kind: StoreKind, cpus: number[]): string {
  return cpus.length > 0 ? `${kind} cpu ${median(cpus).toFixed(1)} µs/event; ` : '';
}

async function storeRows(ctx: BenchContext, kind: StoreKind, n: number, repeats: number): Promise<BenchRow[]> {
  const rates: number[] = [];
  const floors: number[] = [];
  const ratios: number[] = [];
  const cpus: number[] = [];
  const mainCpus: number[] = [];
  const storeCpus: number[] = [];
  const floorStoreCpus: number[] = [];
  const rss: number[] = [];
  const ceilings: number[] = [];
  const ceilingRatios: number[] = [];
  for (let r = 0; r < repeats; r++) {
    ctx.log(`service ${kind}: run ${r + 1}/${repeats}: floor (${n.toLocaleString('en-US')} events)`);
    const floor = await measureFloor(kind, n, floorTarget(ctx, kind, 'service'));
    ctx.log(`service ${kind}: run ${r + 1}/${repeats}: ceiling (a bare server, same clients)`);
    const ceiling = await measureCeiling({ kind, n, target: floorTarget(ctx, kind, 'ceiling'), clients: 4, batch: BATCH });
    ceilings.push(ceiling);
    ceilingRatios.push(ceiling / floor.rate);
    ctx.log(`service ${kind}: run ${r + 1}/${repeats}: npm start + POST /import`);
    const args: ServiceArgs = { kind, n, tmpDir: ctx.tmpDir, pgUrl: ctx.pgUrl, clickhouseUrl: ctx.clickhouseUrl, redisUrl: ctx.redisUrl, clients: 4 };
    const res = await serviceImport(args);
    if (res.stored !== n) throw new Error(`service ${kind}: stored ${res.stored} of ${n} events`);
    const rate = res.events / res.seconds;
    rates.push(rate);
    floors.push(floor.rate);
    ratios.push(rate / floor.rate);
    cpus.push(res.serverCpuUsPerEvent);
    mainCpus.push(res.mainThreadCpuUsPerEvent);
    if (res.storeCpuUsPerEvent !== undefined) storeCpus.push(res.storeCpuUsPerEvent);
    if (floor.storeCpuUsPerEvent !== undefined) floorStoreCpus.push(floor.storeCpuUsPerEvent);
    rss.push(res.serverPeakRssMb);
    ctx.log(`service ${kind}: ${Math.round(rate)} events/s vs floor ${Math.round(floor.rate)} (${(rate / floor.rate).toFixed(2)}); ceiling ${Math.round(ceiling)} (${(ceiling / floor.rate).toFixed(2)})`);
  }
  const section = `service ${kind}`;
  const spread = `ratios ${ratios.map((x) => x.toFixed(2)).join(' ')}`;
  return [
    {
      section,
      name: `floor (${FLOOR_NAMES[kind]})`,
      unit: 'events/s',
      value: median(floors),
      note: `${n} events, median of ${repeats}; ${storeCpuNote(kind, floorStoreCpus)}${machineNote()}`,
    },
    {
      section,
      name: 'POST /import from outside, npm start, 4 clients',
      unit: 'events/s',
      value: median(rates),
      ratio: `${median(ratios).toFixed(2)} of floor`,
      peakRssMb: Math.max(...rss),
      note: `${spread}; server cpu ${median(cpus).toFixed(1)} µs/event (main thread ${median(mainCpus).toFixed(1)})${storeCpus.length ? `; ${storeCpuNote(kind, storeCpus).slice(0, -2)}` : ''}`,
    },
    {
      section,
      name: 'ceiling: a bare server (gunzip, parse, land; nothing checked), same clients',
      unit: 'events/s',
      value: median(ceilings),
      ratio: `${median(ceilingRatios).toFixed(2)} of floor`,
      note: `ratios ${ceilingRatios.map((x) => x.toFixed(2)).join(' ')}; a subset of /import's work, so the most any service can reach with this request shape here (noise aside)`,
    },
  ];
}

/**
 * Identity (issue 12): the same identity-carrying events with the rules on (simplified) and off
 * (original), at two link densities — the worst case, 50k users with two devices each in 200k
 * events (a new link every second event), and a typical one, 5k users (one new link per 20 events).
 */
async function identityRows(ctx: BenchContext, kind: StoreKind, n: number, repeats: number): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const users of [50_000, 5_000]) {
    const on: number[] = [];
    const off: number[] = [];
    const ratios: number[] = [];
    const cpuRatios: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const measure = async (idMerge: 'simplified' | 'original') => {
        ctx.log(`service ${kind}: identity ${idMerge === 'simplified' ? 'on' : 'off'}, ${users} users, run ${r + 1}/${repeats}`);
        const res = await serviceImport({ kind, n, tmpDir: ctx.tmpDir, pgUrl: ctx.pgUrl, clickhouseUrl: ctx.clickhouseUrl, redisUrl: ctx.redisUrl, clients: 4, identity: true, users, idMerge });
        if (res.stored !== n) throw new Error(`service ${kind} identity ${idMerge}: stored ${res.stored} of ${n} events`);
        return { rate: res.events / res.seconds, cpu: res.serverCpuUsPerEvent };
      };
      // Alternate which runs first: a drift in the machine's load then biases neither side.
      const a = r % 2 === 0 ? await measure('original') : undefined;
      const b = await measure('simplified');
      const offRun = a ?? (await measure('original'));
      off.push(offRun.rate);
      on.push(b.rate);
      ratios.push(b.rate / offRun.rate);
      cpuRatios.push(b.cpu / offRun.cpu);
    }
    const devices = `${(users * 2).toLocaleString('en-US')} devices in ${n.toLocaleString('en-US')} events`;
    rows.push(
      { section: `service ${kind}`, name: `POST /import, identity off, ${devices}`, unit: 'events/s', value: median(off), note: `original project; median of ${repeats}` },
      {
        section: `service ${kind}`,
        name: `POST /import, identity on, ${devices}`,
        unit: 'events/s',
        value: median(on),
        ratio: `${median(ratios).toFixed(2)} of off`,
        note: `ratios ${ratios.map((x) => x.toFixed(2)).join(' ')}; server cpu ${median(cpuRatios).toFixed(2)}x of off; ids derived, devices recorded, links written`,
      },
    );
  }
  return rows;
}

export const bench: BenchModule = {
  title: 'the service from outside: POST /import vs each store floor',
  run: async (ctx) => {
    const n = Math.max(4000, Math.round((200_000 * ctx.scale) / 2000) * 2000);
    const repeats = Math.max(1, Number(process.env.BENCH_REPEATS ?? '5'));
    // BENCH_STORES=sqlite,postgres,clickhouse (the default): which stores to run.
    const wanted = new Set((process.env.BENCH_STORES ?? 'sqlite,postgres,clickhouse').split(','));
    const reachable: Record<StoreKind, () => Promise<boolean>> = {
      sqlite: async () => true,
      postgres: () => pgReachable(ctx.pgUrl),
      clickhouse: () => clickhouseReachable(ctx.clickhouseUrl),
    };
    const rows: BenchRow[] = [];
    for (const kind of ['sqlite', 'postgres', 'clickhouse'] as const) {
      if (!wanted.has(kind)) continue;
      if (!(await reachable[kind]())) {
        ctx.log(`service: ${kind} not reachable, skipping its rows`);
        continue;
      }
      rows.push(...(await storeRows(ctx, kind, n, repeats)));
      const identityRepeats = Math.max(1, Number(process.env.BENCH_IDENTITY_REPEATS ?? '5'));
      if (process.env.BENCH_IDENTITY !== '0') rows.push(...(await identityRows(ctx, kind, n, identityRepeats)));
    }
    return rows;
  },
};
