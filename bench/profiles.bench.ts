/**
 * Profiles and lookup tables (issue 2 item 5): the profile write path with 2000-update batches
 * (updates/s), and an all-or-nothing lookup-table CSV replace (rows/s), on SQLite and Postgres.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runIsolated } from './isolated.js';
import type { CaseArgs, CaseResult } from './profiles-cases.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { pgReachable } from './pg-reachable.js';

const CASES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'profiles-cases.ts');

async function section(ctx: BenchContext, kind: 'sqlite' | 'postgres'): Promise<BenchRow[]> {
  const target = (name: string) => (kind === 'sqlite' ? path.join(ctx.tmpDir, `${name}.sqlite`) : ctx.pgUrl!);
  const updates = Math.max(4000, Math.round(40_000 * ctx.scale));
  const rows = Math.max(10_000, Math.round(200_000 * ctx.scale));
  ctx.log(`profiles ${kind}: ${updates} updates`);
  const u = await runIsolated<CaseResult>(CASES, 'profileUpdates', { kind, target: target('profiles'), n: updates } satisfies CaseArgs, { as: 'web' });
  ctx.log(`profiles ${kind}: lookup table of ${rows} rows`);
  const l = await runIsolated<CaseResult>(CASES, 'lookupReplace', { kind, target: target('lookup'), n: rows } satisfies CaseArgs, { as: 'web' });
  return [
    {
      section: `profiles ${kind}`,
      name: `applyProfileUpdates, 2000-update batches (${updates.toLocaleString('en-US')} updates)`,
      unit: 'updates/s',
      value: u.result.count / u.result.seconds,
      peakRssMb: u.peakRssMb,
      note: 'half $set of 10 props, half $add+$union; 4 updates per profile',
    },
    {
      section: `profiles ${kind}`,
      name: `replaceLookupTable, ${rows.toLocaleString('en-US')}-row CSV`,
      unit: 'rows/s',
      value: l.result.count / l.result.seconds,
      peakRssMb: l.peakRssMb,
      note: 'parse + type + one-transaction replace',
    },
  ];
}

export const bench: BenchModule = {
  title: 'profiles and lookup tables: write paths',
  run: async (ctx) => {
    const rows = await section(ctx, 'sqlite');
    if (await pgReachable(ctx.pgUrl)) rows.push(...(await section(ctx, 'postgres')));
    else ctx.log('profiles: Postgres not reachable, skipping its rows');
    return rows;
  },
};
