/**
 * ClickHouse (issue 13): a report table over a big data set — counts by day, a segmentation by a property, unique users — on SQLite, PostgreSQL
 * and ClickHouse. The data set is 10M events at BENCH_SCALE=1 (BENCH_REPORT_EVENTS overrides).
 * ClickHouse rows are left out, with a log line, when BENCH_CLICKHOUSE_URL does not answer.
 * POST /import into ClickHouse against its floor is measured from outside in service.bench.ts.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReportArgs, ReportResult, ReportStoreKind } from './clickhouse-cases.js';
import { runIsolated } from './isolated.js';
import { clickhouseReachable } from './clickhouse-reachable.js';
import { pgReachable } from './pg-reachable.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'clickhouse-cases.ts');

async function reportSection(ctx: BenchContext, kinds: { kind: ReportStoreKind; target: string }[], n: number): Promise<BenchRow[]> {
  const section = `reports over ${n.toLocaleString('en-US')} events`;
  const results = new Map<ReportStoreKind, ReportResult>();
  const rows: BenchRow[] = [];
  for (const { kind, target } of kinds) {
    ctx.log(`reports ${kind}: loading ${n.toLocaleString('en-US')} events, then 3 reports`);
    const { result, peakRssMb } = await runIsolated<ReportResult>(CASES, 'reports', { kind, n, target } satisfies ReportArgs, { as: 'web' });
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
    if (!haveClickHouse) ctx.log(`clickhouse: ${url} does not answer, skipping its rows`);
    const n = Number(process.env.BENCH_REPORT_EVENTS ?? Math.max(10_000, Math.round(10_000_000 * ctx.scale)));
    const kinds: { kind: ReportStoreKind; target: string }[] = [{ kind: 'sqlite', target: path.join(ctx.tmpDir, 'reports.sqlite') }];
    if (await pgReachable(ctx.pgUrl)) kinds.push({ kind: 'postgres', target: ctx.pgUrl! });
    if (haveClickHouse) kinds.push({ kind: 'clickhouse', target: url });
    rows.push(...(await reportSection(ctx, kinds, n)));
    return rows;
  },
};
