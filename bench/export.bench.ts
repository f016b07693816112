/**
 * Read-back export (issue 2 item 6): /api/2.0/export streamed over HTTP, events/s, and peak RSS
 * of the serving process for a quarter of the events and for all of them — with a streamed,
 * paged export the two should be close (memory flat in the export's size).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runIsolated } from './isolated.js';
import type { ExportArgs, ExportResult, Seeded, SeedArgs } from './export-cases.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { pgReachable } from './pg-reachable.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'export-cases.ts');

async function section(ctx: BenchContext, kind: 'sqlite' | 'postgres', n: number): Promise<BenchRow[]> {
  const target = kind === 'sqlite' ? path.join(ctx.tmpDir, 'export.sqlite') : ctx.pgUrl!;
  ctx.log(`export ${kind}: seeding ${n.toLocaleString('en-US')} events`);
  const { result: seeded } = await runIsolated<Seeded>(CASES, 'seed', { kind, target, n } satisfies SeedArgs);
  const rows: BenchRow[] = [];
  try {
    for (const limit of [Math.round(n / 4), n]) {
      ctx.log(`export ${kind}: ${limit.toLocaleString('en-US')} events over HTTP`);
      const args: ExportArgs = { ...seeded, redisUrl: ctx.redisUrl, limit: limit < n ? limit : undefined };
      const { result, peakRssMb } = await runIsolated<ExportResult>(CASES, 'exportOverHttp', args, { as: 'web' });
      if (result.events !== limit) throw new Error(`export returned ${result.events} of ${limit} events`);
      rows.push({
        section: `export ${kind}`,
        name: `GET /api/2.0/export, ${limit.toLocaleString('en-US')} events`,
        unit: 'events/s',
        value: result.events / result.seconds,
        peakRssMb,
        note: `${Math.round(result.bytes / 2 ** 20)} MB of JSONL; server+client process RSS`,
      });
    }
  } finally {
    await runIsolated(CASES, 'cleanup', seeded);
  }
  return rows;
}

export const bench: BenchModule = {
  title: 'read-back: streamed export over HTTP',
  run: async (ctx) => {
    const n = Math.max(8000, Math.round(200_000 * ctx.scale));
    const rows = await section(ctx, 'sqlite', n);
    if (await pgReachable(ctx.pgUrl)) rows.push(...(await section(ctx, 'postgres', n)));
    else ctx.log('export: Postgres not reachable, skipping its rows');
    return rows;
  },
};
