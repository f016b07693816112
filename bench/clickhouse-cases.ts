/**
 * The ClickHouse bench's measurements (run in their own process by bench/isolated.ts): reports
 * over a big generated data set (10M events at scale 1) on any store — load it, then time counts
 * by day, a segmentation by a property and unique users, each as one store.report(). (Ingestion
 * into ClickHouse is measured from outside by service.bench.ts.)
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { parseExpression } from '../src/domain/where-expression.js';
import { ClickHouseEventStore } from '../src/store/clickhouse/clickhouse-event.store.js';
import { dropEventStore, migrateEventStore } from '../src/store/clickhouse/clickhouse-migrate.js';
import { eventsBodyOf, INSERT_COLUMNS } from '../src/store/clickhouse/clickhouse-rows.js';
import { ClickHouseConnection } from '../src/store/clickhouse/clickhouse-connection.js';
import { parseClickHouseUrl, withDatabase } from '../src/store/clickhouse/clickhouse-url.js';
import type { EventStore, ReportQuery } from '../src/store/event-store.js';
import { benchEventStore, openBenchStore } from './bench-store.js';
import { benchRows, sliceRows } from './floors.js';

export const BATCH = 2000;
const DAY = 86_400_000;

export interface RateResult {
  events: number;
  seconds: number;
  stored: number;
}

/** A fresh database for one measurement; dropped by the returned function. */
export async function scratchClickHouse(url: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const scoped = withDatabase(url, `bench_${crypto.randomBytes(5).toString('hex')}`);
  // The hot properties the service under test gets too (EVENT_STORE_HOT_PROPERTIES, else the defaults).
  await migrateEventStore({ EVENT_STORE_URL: scoped, EVENT_STORE_HOT_PROPERTIES: process.env.EVENT_STORE_HOT_PROPERTIES });
  return { url: scoped, drop: () => dropEventStore({ EVENT_STORE_URL: scoped }) };
}

export type ReportStoreKind = 'sqlite' | 'postgres' | 'clickhouse';

export interface ReportArgs {
  kind: ReportStoreKind;
  n: number;
  /** sqlite: a file path; postgres: server URL; clickhouse: server URL (clickhouse://…/). */
  target: string;
}

export interface ReportResult {
  loadSeconds: number;
  /** ms per report, by report name. */
  reports: Record<string, number>;
  count: number;
}

interface OpenStore {
  store: EventStore;
  projectId: number;
  /** ClickHouse only: where the bulk load inserts. */
  clickhouseUrl?: string;
  close: () => Promise<void>;
}

async function openReportStore(args: ReportArgs): Promise<OpenStore> {
  if (args.kind === 'clickhouse') {
    const scratch = await scratchClickHouse(args.target);
    const store = new ClickHouseEventStore({ EVENT_STORE_URL: scratch.url });
    return {
      store,
      projectId: 1,
      clickhouseUrl: scratch.url,
      close: async () => {
        await store.close();
        await scratch.drop();
      },
    };
  }
  const o = await openBenchStore(args.kind, args.kind === 'sqlite' ? path.resolve(args.target) : args.target);
  const store = benchEventStore(o.db);
  return {
    store,
    projectId: o.projectId,
    close: async () => {
      await store.close();
      await o.close();
    },
  };
}

/** Loads `n` events in chunks (bulk for ClickHouse: the report, not the write path, is measured). */
async function load(o: OpenStore, args: ReportArgs): Promise<void> {
  const CHUNK = 100_000;
  const now = Date.now();
  const bulk = o.clickhouseUrl ? new ClickHouseConnection(parseClickHouseUrl(o.clickhouseUrl), { requestTimeoutMs: 600_000 }) : undefined;
  for (let done = 0, seed = 1; done < args.n; done += CHUNK, seed++) {
    const rows = benchRows(Math.min(CHUNK, args.n - done), seed);
    if (bulk) {
      await bulk.insertRowBinary('events', INSERT_COLUMNS, eventsBodyOf(rows, { projectId: o.projectId, source: 'import', now, ver: 1, isNew: true }).chunks);
    } else {
      for (let i = 0; i < rows.event.length; i += BATCH) await o.store.writeBatch({ projectId: o.projectId, source: 'import', rows: sliceRows(rows, i, i + BATCH), now });
    }
  }
  await bulk?.close();
}

type Range = { projectId: number; fromMs: number; toMs: number };

export const REPORTS: Record<string, (range: Range) => ReportQuery> = {
  'counts by day': (r) => ({ ...r, unit: 'day', type: 'general' }),
  'segmentation by mp_country_code': (r) => ({ ...r, unit: 'day', type: 'general', on: parseExpression('properties["mp_country_code"]') }),
  'unique users by day': (r) => ({ ...r, unit: 'day', type: 'unique' }),
};

export async function reports(args: ReportArgs): Promise<ReportResult> {
  const o = await openReportStore(args);
  try {
    const t0 = performance.now();
    await load(o, args);
    const loadSeconds = (performance.now() - t0) / 1000;
    const count = await o.store.count(o.projectId);
    const today = Math.floor(Date.now() / DAY) * DAY;
    const range = { projectId: o.projectId, fromMs: today - 31 * DAY, toMs: today + DAY };
    const out: Record<string, number> = {};
    for (const [name, query] of Object.entries(REPORTS)) {
      await o.store.report(query(range)); // warm caches once: the second run is the measurement
      const s = performance.now();
      await o.store.report(query(range));
      out[name] = performance.now() - s;
    }
    return { loadSeconds, reports: out, count };
  } finally {
    await o.close();
  }
}
