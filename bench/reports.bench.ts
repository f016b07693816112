/**
 * Reports pushed down to the event store (issue 13's report table): events of 30 days from many devices,
 * a quarter of them later linked to users, loaded through EventStore.writeBatch; then the
 * segmentation reports as the insights API runs them (EventStore.report): counts by day,
 * segmentation by a property, unique users (COUNT DISTINCT over the resolved id), average.
 * Measured at the store interface (the insights API adds only shaping; bench/identity.bench.ts
 * times `unique` over HTTP). Size: 1M events × BENCH_SCALE with 100k devices × BENCH_SCALE; set
 * BENCH_REPORT_EVENTS=10000000 for the 10M table. Each store kind is one section; a store kind
 * (e.g. ClickHouse) joins by adding an entry to `REPORT_STORES`.
 */
import path from 'node:path';
import { parseExpression } from '../src/domain/where-expression.js';
import { DAY_MS } from '../src/domain/time-buckets.js';
import type { EventStore, ReportQuery } from '../src/store/event-store.js';
import { toEventRows } from '../src/store/event-rows.js';
import { benchEventStore, openBenchStore } from './bench-store.js';
import { pgReachable } from './pg-reachable.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';

export interface ReportStore {
  name: string;
  /** A fresh store with a project, or undefined when this kind is not available here. */
  open: (ctx: BenchContext) => Promise<OpenedStore | undefined>;
}

export interface OpenedStore {
  store: EventStore;
  projectId: number;
  /** After the load, what a live database would have done by itself (e.g. statistics). */
  settle?: () => Promise<void>;
  close: () => Promise<void>;
}

export const REPORT_STORES: ReportStore[] = [
  {
    name: 'sqlite',
    open: async (ctx) => {
      const s = await openBenchStore('sqlite', path.join(ctx.tmpDir, 'reports.sqlite'));
      return { store: benchEventStore(s.db), projectId: s.projectId, settle: async () => void (await s.db.raw('ANALYZE')), close: s.close };
    },
  },
  {
    name: 'postgres',
    open: async (ctx) => {
      if (!(await pgReachable(ctx.pgUrl))) return undefined;
      const s = await openBenchStore('postgres', ctx.pgUrl!);
      // Autovacuum analyzes a live table; a bench's fresh one has no statistics yet, and without
      // them the planner takes the identity join for a handful of rows (docs/read-back.md).
      return { store: benchEventStore(s.db), projectId: s.projectId, settle: async () => void (await s.db.raw('ANALYZE')), close: s.close };
    },
  },
];

const START = Date.UTC(2024, 0, 1);
const DAYS = 30;
const BATCH = 20_000;
const OSES = ['web', 'ios', 'android', 'mac', 'windows'];

/** Deterministic events: anonymous device events, and sign-ins that link a quarter of the devices. */
async function load(store: EventStore, projectId: number, n: number, devices: number): Promise<number> {
  const started = performance.now();
  for (let from = 0; from < n; from += BATCH) {
    const events = [];
    for (let i = from; i < Math.min(n, from + BATCH); i++) {
      const d = (i * 7919) % devices;
      const device = `dev-${d}`;
      const signIn = d % 4 === 0 && i % 10 === 0;
      events.push({
        event: signIn ? 'Sign in' : ['Page view', 'Click', 'Purchase'][i % 3]!,
        distinctId: signIn ? `user-${d}` : `$device:${device}`,
        time: START + Math.floor((i / n) * DAYS * DAY_MS),
        insertId: `r-${i}`,
        properties: { os: OSES[d % OSES.length], plan: d % 3 ? 'free' : 'pro', amount: i % 100 },
        ...(signIn ? { link: { deviceId: device, userId: `user-${d}` } } : { deviceId: device }),
      });
    }
    await store.writeBatch({ projectId, source: 'import', rows: toEventRows(events), now: Date.now() });
  }
  return n / ((performance.now() - started) / 1000);
}

async function timed(store: EventStore, q: ReportQuery, repeats: number): Promise<number> {
  let best = Infinity;
  for (let r = 0; r < repeats; r++) {
    const t0 = performance.now();
    const cells = await store.report(q);
    if (cells.length === 0) throw new Error('report returned nothing');
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

export const bench: BenchModule = {
  title: 'reports pushed down to the event store (counts, segmentation, unique users)',
  run: async (ctx) => {
    const n = Number(process.env.BENCH_REPORT_EVENTS ?? Math.max(20_000, Math.round(1_000_000 * ctx.scale)));
    const devices = Math.max(1000, Math.round(n / 10));
    const repeats = Math.max(1, Number(process.env.BENCH_REPEATS ?? '2'));
    const range = { fromMs: START, toMs: START + DAYS * DAY_MS };
    const rows: BenchRow[] = [];
    for (const kind of REPORT_STORES) {
      const opened = await kind.open(ctx);
      if (!opened) {
        ctx.log(`reports: ${kind.name} not available, skipping`);
        continue;
      }
      const section = `reports ${kind.name}`;
      try {
        ctx.log(`reports ${kind.name}: loading ${n.toLocaleString('en-US')} events, ${devices.toLocaleString('en-US')} devices`);
        const rate = await load(opened.store, opened.projectId, n, devices);
        await opened.settle?.();
        rows.push({ section, name: `load through writeBatch, ${n.toLocaleString('en-US')} events`, unit: 'events/s', value: rate, note: `${BATCH} per batch` });
        const base = { projectId: opened.projectId, ...range };
        const cases: [string, ReportQuery][] = [
          ['counts by day (general)', { ...base, unit: 'day', type: 'general' }],
          ['segmentation by a property, by day', { ...base, unit: 'day', type: 'general', on: parseExpression('properties["os"]') }],
          ['unique users by day', { ...base, unit: 'day', type: 'unique' }],
          ['unique users by day, on a property, with where', { ...base, unit: 'day', type: 'unique', on: parseExpression('properties["os"]'), where: parseExpression('properties["plan"] == "pro"') }],
          ['average events per user by week', { ...base, unit: 'week', type: 'average' }],
        ];
        for (const [name, q] of cases) {
          ctx.log(`reports ${kind.name}: ${name}`);
          rows.push({ section, name, unit: 'ms', value: await timed(opened.store, q, repeats), note: `${n.toLocaleString('en-US')} events, ${DAYS} days, best of ${repeats}` });
        }
      } finally {
        await opened.close();
      }
    }
    return rows;
  },
};
