/**
 * Warehouse triggers racing other writes, over HTTP, with the interleaving forced (see
 * test/helpers/races.ts): a manual sync while its import or source is deleted (404, never a
 * foreign-key 500), an import created while its source is deleted (the missing-source 400), a
 * one_time import triggered while its run finishes (one run, then 400) and the per-hour limit
 * while the active run finishes (never more than the limit).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { committedDuring } from '../helpers/races.js';
import { sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { call, type Api, type ApiResponse } from '../helpers/warehouse.js';

const PER_HOUR = 2;

describe.each(dbKinds())('warehouse trigger races on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;
  let api: Api;
  let src: WarehouseSourceHandle;

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { MANUAL_SYNC_PER_HOUR: PER_HOUR });
    p = await seedProject(t.db);
    api = { url: app.url, basic: p.basic, projectId: p.id };
    src = await sqliteSourceFixture.create();
    await src.createTable({ name: 'ev', columns: [{ name: 'ts', type: 'timestamp', notNull: true }, { name: 'u', type: 'text' }] });
  });
  afterAll(async () => {
    await src?.cleanup();
    await app?.queues.queues['warehouse-sync'].obliterate({ force: true });
    await app?.close();
    await t?.destroy();
  });

  const newSource = async () => {
    const res = await call(api, 'POST', '', src.sourceBody());
    expect(res.status).toBe(200);
    return res.body.results.id as number;
  };
  const importBody = (sourceId: number, extra: Record<string, unknown> = {}) => ({
    warehouse_source_id: sourceId,
    import_type: 'events',
    table_params: { table: 'ev' },
    sync_mode: 'full_sync',
    schedule: 'api_only',
    event_name: 'e',
    time_column_name: 'ts',
    user_column_name: 'u',
    ...extra,
  });
  const newImport = async (extra: Record<string, unknown> = {}) => {
    const sourceId = await newSource();
    const res = await call(api, 'POST', '/imports', importBody(sourceId, extra));
    expect(res.status).toBe(200);
    return { sourceId, importId: res.body.results.id as number };
  };
  const sync = (importId: number) => call(api, 'PUT', `/imports/${importId}/manual-sync`);
  const runsOf = async (importId: number) => t.db('sync_runs').where({ import_id: importId }).orderBy('created_at').select('id', 'status');
  const succeed = (db: TestDb['db'], runId: string) => db('sync_runs').where({ id: runId }).update({ status: 'SUCCEEDED', finished_at: Date.now() });

  /** `change` committed in the middle of `operation` (helpers/races.ts). */
  const racing = <T>(change: (db: TestDb['db']) => PromiseLike<unknown>, sqliteAfter: RegExp, operation: () => Promise<T>) =>
    committedDuring(kind, t.db, change, sqliteAfter, operation);
  const selectFrom = (table: string) => new RegExp(`^select .* from [\`"]${table}[\`"]`);

  const expectNotFound = (res: ApiResponse, importId: number) => {
    expect(res.status, JSON.stringify(res.body)).toBe(404);
    expect(res.body).toMatchObject({ status: 'error', type: 'not_found', error: `warehouse import ${importId} not found in project ${p.id}` });
  };

  it('a manual sync racing the DELETE of its import answers 404 and leaves no run', async () => {
    const { importId } = await newImport();
    const res = await racing((db) => db('warehouse_imports').where({ id: importId }).delete(), selectFrom('warehouse_imports'), () => sync(importId));
    expectNotFound(res, importId);
    expect(await runsOf(importId)).toEqual([]);
  });

  it('a manual sync racing the DELETE of its source (which takes the import) answers 404', async () => {
    const { sourceId, importId } = await newImport();
    const res = await racing((db) => db('warehouse_sources').where({ id: sourceId }).delete(), selectFrom('warehouse_imports'), () => sync(importId));
    expectNotFound(res, importId);
    expect(await runsOf(importId)).toEqual([]);
  });

  it('an import created while its source is deleted gets the missing-source 400, and nothing is stored', async () => {
    const sourceId = await newSource();
    const res = await racing((db) => db('warehouse_sources').where({ id: sourceId }).delete(), selectFrom('warehouse_sources'), () =>
      call(api, 'POST', '/imports', importBody(sourceId)),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toBe(`warehouse_source_id: warehouse source ${sourceId} does not exist in project ${p.id}`);
    expect(await t.db('warehouse_imports').where({ source_id: sourceId })).toEqual([]);
  });

  it('a one_time import triggered while its run succeeds runs once; the next trigger is a 400', async () => {
    const { importId } = await newImport({ sync_mode: 'one_time' });
    const first = await sync(importId);
    expect(first.status).toBe(200);
    const runId = first.body.results.run_id as string;
    const res = await racing((db) => succeed(db, runId), selectFrom('sync_runs'), () => sync(importId));
    // Before the run finished it is the run returned; after, the import is done. Never a second run.
    if (res.status === 200) expect(res.body.results.run_id).toBe(runId);
    else expect(res.body.error).toMatch(/is one_time and has already completed/);
    expect(res.status === 200 || res.status === 400, JSON.stringify(res.body)).toBe(true);
    expect(await runsOf(importId)).toEqual([{ id: runId, status: 'SUCCEEDED' }]);
    const again = await sync(importId);
    expect(again.status).toBe(400);
    expect(await runsOf(importId)).toHaveLength(1);
  });

  it(`the per-hour limit holds while the active run finishes: never more than ${PER_HOUR} manual runs`, async () => {
    const { importId } = await newImport();
    const first = await sync(importId);
    await succeed(t.db, first.body.results.run_id);
    const second = await sync(importId);
    expect(second.status).toBe(200);
    const activeId = second.body.results.run_id as string;
    const res = await racing((db) => succeed(db, activeId), selectFrom('sync_runs'), () => sync(importId));
    // Before the run finished it is the run returned; after, the limit is reached.
    if (res.status === 200) expect(res.body.results.run_id).toBe(activeId);
    else expect(res.body.error).toMatch(new RegExp(`limit is ${PER_HOUR}`));
    expect(res.status === 200 || res.status === 429, JSON.stringify(res.body)).toBe(true);
    expect(await runsOf(importId)).toHaveLength(PER_HOUR);
    expect((await sync(importId)).status).toBe(429);
  });

  it('many concurrent triggers of a one_time import whose runs finish at once: one run, no 500', async () => {
    const { importId } = await newImport({ sync_mode: 'one_time' });
    const finisher = (async () => {
      for (let i = 0; i < 40; i++) {
        await t.db('sync_runs').where({ import_id: importId }).whereIn('status', ['QUEUED', 'RUNNING']).update({ status: 'SUCCEEDED', finished_at: Date.now() });
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const answers = await Promise.all(Array.from({ length: 20 }, () => sync(importId)));
    await finisher;
    for (const a of answers) expect([200, 400], JSON.stringify(a.body)).toContain(a.status);
    expect(await runsOf(importId)).toHaveLength(1);
  });
});
