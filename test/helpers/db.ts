/**
 * A fresh, migrated database per test file: a temp SQLite file, or a fresh schema in the
 * Postgres of TEST_DATABASE_URL. `dbKinds()` is what a suite runs against: SQLite always,
 * Postgres when TEST_DATABASE_URL is set (.ci/run sets it).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb, type Db, type Dialect } from '../../src/db/knex.js';
import { migrateLatest } from '../../src/db/migrate.js';

export interface TestDb {
  kind: Dialect;
  db: Db;
  /** A DATABASE_URL another process can use to reach the same data. */
  url: string;
  /** Postgres schema (for spawned processes: pass as search_path via options). */
  schema?: string;
  destroy: () => Promise<void>;
}

export function dbKinds(): Dialect[] {
  return process.env.TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];
}

export async function createTestDb(kind: Dialect): Promise<TestDb> {
  if (kind === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'analytics-test-'));
    const file = path.join(dir, 'test.sqlite');
    const db = createDb({ DATABASE_URL: file });
    await migrateLatest(db);
    return {
      kind,
      db,
      url: file,
      destroy: async () => {
        await db.destroy();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const base = process.env.TEST_DATABASE_URL;
  if (!base) throw new Error('TEST_DATABASE_URL is not set');
  const schema = `t_${crypto.randomBytes(6).toString('hex')}`;
  const admin = createDb({ DATABASE_URL: base }, { poolMax: 1 });
  await admin.raw(`CREATE SCHEMA ${schema}`);
  await admin.destroy();
  const db = createDb({ DATABASE_URL: base }, { schema });
  await migrateLatest(db);
  const url = withSearchPath(base, schema);
  return {
    kind,
    db,
    url,
    schema,
    destroy: async () => {
      await db.destroy();
      const cleanup = createDb({ DATABASE_URL: base }, { poolMax: 1 });
      await cleanup.raw(`DROP SCHEMA ${schema} CASCADE`);
      await cleanup.destroy();
    },
  };
}

/** A postgres URL whose connections default to the given schema (libpq `options`). */
export function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}
