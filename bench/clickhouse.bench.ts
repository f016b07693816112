/**
 * ClickHouse (issue 13): (1) POST /import into a service whose events live in ClickHouse against
 * the bare @clickhouse/client insert floor, same events, same run; (2) a report table over a big
 * data set — counts by day, a segmentation by a property, unique users — on SQLite, PostgreSQL
 * and ClickHouse. The data set is 10M events at BENCH_SCALE=1 (BENCH_REPORT_EVENTS overrides).
 * ClickHouse rows are left out, with a log line, when BENCH_CLICKHOUSE_URL does not answer.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FloorArgs, RateResult, ReportArgs, ReportResult, ReportStoreKind } from './clickhouse-cases.js';
import { dropEventStore, migrateEventStore } from '../src/store/clickhouse/clickhouse-migrate.js';
import { withDatabase } from '../src/store/clickhouse/clickhouse-url.js';
import type { CaseArgs as IngestArgs, CaseResult as IngestResult } from './ingest-cases.js';
import { runIsolated } from './isolated.js';
import { clickhouseReachable } from './clickhouse-reachable.js';
import { pgReachable } from './pg-reachable.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'clickhouse-cases.ts');
const INGEST_CASES = path.join(here, 'ingest-cases.ts');

async function ingestSection(ctx: BenchContext, url: string, n: number): Promise<BenchRow[]> {
  const section = 'ingest clickhouse';
  ctx.log(`clickhouse: floor, ${n.toLocaleString('en-US')} events`);
  const { result: floor, peakRssMb: floorRss } = await runIsolated<RateResult>(CASES, 'floor', { clickhouseUrl: url, n } satisfies FloorArgs);
  if (floor.stored !== n) throw new Error(`floor stored ${floor.stored} of ${n}`);
  const floorRate = floor.events / floor.seconds;
  ctx.log(`clickhouse: POST /import, ${n.toLocaleString('en-US')} events`);
  // The ingestion bench's /import harness (bench/ingest-cases.ts), with events in a scratch
  // ClickHouse database: accounts in a SQLite file, as a deployment keeps them in DATABASE_URL.
  const scratch = withDatabase(url, `bench_${crypto.randomBytes(5).toString('hex')}`);
  await migrateEventStore({ EVENT_STORE_URL: scratch });
  let imp: IngestResult;
  let impRss: number;
  try {
    const args: IngestArgs = { kind: 'sqlite', n, target: path.join(ctx.tmpDir, 'clickhouse-import.sqlite'), clients: 4, redisUrl: ctx.redisUrl, eventStoreUrl: scratch, appConfig: { INGEST_WORKERS: 0 } };
    ({ result: imp, peakRssMb: impRss } = await runIsolated<IngestResult>(INGEST_CASES, 'httpImport', args));
  } finally {
    await dropEventStore({ EVENT_STORE_URL: scratch });
  }
  if (imp.stored !== n) throw new Error(`/import stored ${imp.stored} of ${n}`);
  const impRate = imp.events / imp.seconds;
  return [
    { section, name: '(a) floor: bare @clickhouse/client inserts, 2000 rows each', unit: 'events/s', value: floorRate, peakRssMb: floorRss, note: `${n} events, built rows` },
    { section, name: '(c) POST /import gzip 2000/batch, 4 clients', unit: 'events/s', value: impRate, ratio: `${(impRate / floorRate).toFixed(2)} of (a)`, peakRssMb: impRss, note: 'EVENT_STORE_URL=clickhouse://… (dedupe lookup + insert per batch); INGEST_WORKERS=0' },
  ];
}

async function reportSection(ctx: BenchContext, kinds: { kind: ReportStoreKind; target: string }[], n: number): Promise<BenchRow[]> {
  const section = `reports over ${n.toLocaleString('en-US')} events`;
  const results = new Map<ReportStoreKind, ReportResult>();
  const rows: BenchRow[] = [];
  for (const { kind, target } of kinds) {
    ctx.log(`reports ${kind}: loading ${n.toLocaleString('en-US')} events, then 3 reports`);
    const { result, peakRssMb } = await runIsolated<ReportResult>(CASES, 'reports', { kind, n, target } satisfies ReportArgs);
    if (result.count !== n) throw new Error(`${kind}: ${result.count} of ${n} events loaded`);
    results.set(kind, result);
    rows.push({ section, name: `${kind}: load`, unit: 's', value: result.loadSeconds, peakRssMb, note: kind === 'clickhouse' ? 'bulk insert' : 'store.writeBatch, 2000/batch' });
  }
  const ch = results.get('clickhouse');
  for (const [kind, result] of results) {
    for (const [name, ms] of Object.entries(result.reports)) {
      let ratio: string | undefined;
      if (kind !== 'clickhouse' && ch?.reports[name]) ratio = `ClickHouse ${(ms / ch.reports[name]!).toFixed(1)}× faster`;
      rows.push({ section, name: `${kind}: ${name}`, unit: 'ms', value: ms, ratio, note: 'one store.report(), warm' });
    }
  }
  return rows;
}

export const bench: BenchModule = {
  title: 'ClickHouse: /import vs insert floor; reports over 10M events per store',
  run: async (ctx) => {
    const url = ctx.clickhouseUrl;
    const haveClickHouse = await clickhouseReachable(url);
    const rows: BenchRow[] = [];
    if (haveClickHouse) rows.push(...(await ingestSection(ctx, url, Math.max(4000, Math.round((200_000 * ctx.scale) / 2000) * 2000))));
    else ctx.log(`clickhouse: ${url} does not answer, skipping its rows`);
    const n = Number(process.env.BENCH_REPORT_EVENTS ?? Math.max(10_000, Math.round(10_000_000 * ctx.scale)));
    const kinds: { kind: ReportStoreKind; target: string }[] = [{ kind: 'sqlite', target: path.join(ctx.tmpDir, 'reports.sqlite') }];
    if (await pgReachable(ctx.pgUrl)) kinds.push({ kind: 'postgres', target: ctx.pgUrl! });
    if (haveClickHouse) kinds.push({ kind: 'clickhouse', target: url });
    rows.push(...(await reportSection(ctx, kinds, n)));
    return rows;
  },
};
