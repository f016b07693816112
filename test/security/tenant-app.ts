/**
 * A hostile tenant's world for one describe block: a test database (SQLite unless said), the
 * real app over it and the real Redis, a seeded project with an owner service account, and
 * optionally a SQLite warehouse source with an `ev (ts NOT NULL, u)` table. Torn down after.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Dialect } from '../../src/db/knex.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import type { Api } from '../helpers/warehouse.js';

export interface TenantApp {
  t: TestDb;
  app: TestApp;
  p: SeededProject;
  /** The project's warehouse API as its owner. */
  api: Api;
  src: WarehouseSourceHandle;
}

export function tenantApp(overrides: Parameters<typeof startTestApp>[1] = {}, options: { kind?: Dialect; source?: boolean } = {}): TenantApp {
  const ctx = {} as TenantApp;
  beforeAll(async () => {
    ctx.t = await createTestDb(options.kind ?? 'sqlite');
    ctx.app = await startTestApp(ctx.t.db, overrides);
    ctx.p = await seedProject(ctx.t.db);
    ctx.api = { url: ctx.app.url, basic: ctx.p.basic, projectId: ctx.p.id };
    if (options.source) {
      ctx.src = await sqliteSourceFixture.create();
      await ctx.src.createTable({ name: 'ev', columns: [{ name: 'ts', type: 'timestamp', notNull: true }, { name: 'u', type: 'text' }] });
    }
  });
  afterAll(async () => {
    for (const q of Object.values(ctx.app?.queues.queues ?? {})) await q.obliterate({ force: true });
    await ctx.app?.close();
    await ctx.src?.cleanup();
    await ctx.t?.destroy();
  });
  return ctx;
}
