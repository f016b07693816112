/**
 * The profiles and lookup-table bench steps, each run by bench/isolated.ts in its own process
 * (so peak RSS is the step's own): the profile write path with 2000-update batches, and a
 * lookup-table CSV replace through the ingest function.
 */
import crypto from 'node:crypto';
import { createProject } from '../src/accounts/accounts.service.js';
import { createDb, type Db } from '../src/db/knex.js';
import { insertLookupTable } from '../src/db/lookup-tables.repo.js';
import { migrateLatest } from '../src/db/migrate.js';
import { replaceLookupTable } from '../src/ingest/lookup-tables.ingest.js';
import { applyProfileUpdates } from '../src/ingest/profiles.ingest.js';

export interface CaseArgs {
  kind: 'sqlite' | 'postgres';
  /** SQLite: a fresh file; Postgres: the server URL (a fresh schema is made and dropped). */
  target: string;
  n: number;
}

export interface CaseResult {
  count: number;
  seconds: number;
}

async function withDb<T>(args: CaseArgs, fn: (db: Db) => Promise<T>): Promise<T> {
  const schema = args.kind === 'postgres' ? `bench_${crypto.randomBytes(5).toString('hex')}` : undefined;
  if (schema) {
    const admin = createDb({ DATABASE_URL: args.target });
    await admin.raw(`CREATE SCHEMA ${schema}`);
    await admin.destroy();
  }
  const db = createDb({ DATABASE_URL: args.target }, schema ? { schema } : {});
  try {
    await migrateLatest(db);
    return await fn(db);
  } finally {
    await db.destroy();
    if (schema) {
      const admin = createDb({ DATABASE_URL: args.target });
      await admin.raw(`DROP SCHEMA ${schema} CASCADE`);
      await admin.destroy();
    }
  }
}

/** `n` updates over n/4 profiles: $set of 10 properties, then $add + $union, in 2000-update calls. */
export async function profileUpdates(args: CaseArgs): Promise<CaseResult> {
  return withDb(args, async (db) => {
    const p = await createProject(db, { name: 'profiles bench' });
    const users = Math.max(1, Math.floor(args.n / 4));
    const updates = Array.from({ length: args.n }, (_, i) => {
      const id = `user-${i % users}`;
      if (i % 2 === 0) {
        const set: Record<string, unknown> = { $email: `${id}@example.com`, plan: ['free', 'pro', 'team'][i % 3], seats: i % 50 };
        for (let k = 0; k < 7; k++) set[`attr_${k}`] = `value ${i % (k + 3)}`;
        return { $distinct_id: id, $set: set, $time: 1_700_000_000_000 + i };
      }
      return { $distinct_id: id, $add: { logins: 1 }, $union: { tags: [`t${i % 5}`] } };
    });
    const started = performance.now();
    for (let i = 0; i < updates.length; i += 2000) {
      const r = await applyProfileUpdates(db, p.id, updates.slice(i, i + 2000));
      if (r.rejected.length) throw new Error(r.rejected[0]!.message);
    }
    return { count: args.n, seconds: (performance.now() - started) / 1000 };
  });
}

/** A lookup-table CSV of `n` rows and 6 columns, replaced through the ingest function. */
export async function lookupReplace(args: CaseArgs): Promise<CaseResult> {
  return withDb(args, async (db) => {
    const p = await createProject(db, { name: 'lookup bench' });
    const table = await insertLookupTable(db, { projectId: p.id, name: 'bench', mappedProperty: 'txn_id', now: Date.now() });
    const lines = ['txn_id,amount,refunded,at,categories,customer'];
    for (let i = 0; i < args.n; i++) lines.push(`txn-${i},${i * 1.5},${i % 3 === 0},2024-01-01T00:00:00Z,"[""c${i % 7}""]",customer ${i % 1000}`);
    const csv = Buffer.from(lines.join('\n'));
    const started = performance.now();
    const { rows } = await replaceLookupTable(db, table.id, csv);
    return { count: rows, seconds: (performance.now() - started) / 1000 };
  });
}
