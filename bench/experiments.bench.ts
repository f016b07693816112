/**
 * Experiments listing (issue 7): latency of GET /api/app/workspaces/{id}/experiments on a
 * workspace with 10k experiments over real HTTP from a separate client process, p50 and p99 over a few requests, per database;
 * the repository query alone is the floor. Each database runs in its own process (peak RSS).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runIsolated } from './isolated.js';
import type { ListArgs, ListResult } from './experiments-cases.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { pgReachable } from './pg-reachable.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'experiments-cases.ts');
const REQUESTS = 15;

/** Nearest-rank percentile. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function section(ctx: BenchContext, kind: 'sqlite' | 'postgres', n: number): Promise<BenchRow[]> {
  ctx.log(`experiments ${kind}: listing ${n.toLocaleString('en-US')} experiments, ${REQUESTS} requests`);
  const args: ListArgs = {
    kind,
    n,
    requests: REQUESTS,
    target: kind === 'sqlite' ? path.join(ctx.tmpDir, 'experiments.sqlite') : ctx.pgUrl!,
    redisUrl: ctx.redisUrl,
  };
  const { result, peakRssMb } = await runIsolated<ListResult>(CASES, 'listLatency', args, { as: 'web' });
  const floor = percentile(result.query, 50);
  const p50 = percentile(result.http, 50);
  const p99 = percentile(result.http, 99);
  const s = `experiments ${kind}`;
  const label = `${n.toLocaleString('en-US')} experiments`;
  return [
    { section: s, name: `repository query, ${label} (p50)`, unit: 'ms', value: floor, note: 'floor' },
    {
      section: s,
      name: `GET …/experiments, ${label} (p50)`,
      unit: 'ms',
      value: p50,
      ratio: `${(p50 / floor).toFixed(2)}× floor`,
      peakRssMb,
      note: `${(result.bytes / 2 ** 20).toFixed(1)} MB body`,
    },
    { section: s, name: `GET …/experiments, ${label} (p99)`, unit: 'ms', value: p99, note: `max of ${REQUESTS} requests` },
  ];
}

export const bench: BenchModule = {
  title: 'experiments: listing a 10k-experiment workspace over HTTP',
  run: async (ctx) => {
    const n = Math.max(100, Math.round(10_000 * ctx.scale));
    const rows = await section(ctx, 'sqlite', n);
    if (await pgReachable(ctx.pgUrl)) rows.push(...(await section(ctx, 'postgres', n)));
    else ctx.log('experiments: Postgres not reachable, skipping its rows');
    return rows;
  },
};
