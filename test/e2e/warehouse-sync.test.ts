/**
 * Warehouse connector end to end, per store (SQLite, Postgres) and per SOURCE fixture (a real
 * SQLite file, a real Postgres schema, …): create a source and imports over HTTP, trigger
 * manual syncs that a real worker runtime (in this process, real Redis) runs, and check the
 * stored events (also through /api/2.0/export and the insights report), profiles, group
 * profiles, lookup rows and the run history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents, eventStoreOf, pageEvents } from '../helpers/events.js';
import { findProfile, countProfiles } from '../../src/db/profiles.repo.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { startInProcessWorker, type InProcessWorker } from '../helpers/job-platform.js';
import { get, lines, qs } from '../helpers/read-back.js';
import { availableWarehouseSources, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { call, createSourceAndImport, history, manualSync, waitForRun, type Api } from '../helpers/warehouse.js';

const T0 = Date.UTC(2024, 4, 1, 12, 0, 0);
const at = (minutes: number) => new Date(T0 + minutes * 60_000);

const EVENT_COLUMNS = [
  { name: 'id', type: 'integer' as const, notNull: true },
  { name: 'event_type', type: 'text' as const },
  { name: 'ts', type: 'timestamp' as const, notNull: true },
  { name: 'user_id', type: 'text' as const },
  { name: 'uid', type: 'integer' as const },
  { name: 'device', type: 'text' as const },
  { name: 'props', type: 'json' as const },
  { name: 'plan', type: 'text' as const },
  { name: 'amount', type: 'real' as const },
  { name: 'inserted_at', type: 'timestamp' as const, notNull: true },
];

const goodRows = [
  { id: 1, event_type: 'signup', ts: at(0), user_id: 'alice', uid: null, device: 'd-1', props: { browser: 'firefox', nested: { a: 1 } }, plan: 'pro', amount: 9.5, inserted_at: at(1) },
  { id: 2, event_type: 'login', ts: at(5), user_id: 'alice', uid: null, device: null, props: null, plan: null, amount: null, inserted_at: at(6) },
  { id: 3, event_type: 'login', ts: at(7), user_id: null, uid: null, device: 'd-9', props: { browser: 'safari' }, plan: 'free', amount: 0, inserted_at: at(8) },
  { id: 4, event_type: 'purchase', ts: at(9), user_id: 'bob', uid: 4242, device: null, props: {}, plan: 'pro', amount: 120, inserted_at: at(10) },
];
const badRows = [
  // no event name
  { id: 5, event_type: null, ts: at(11), user_id: 'carol', uid: null, device: null, props: null, plan: null, amount: null, inserted_at: at(12) },
  // a JSON column holding an array, not an object
  { id: 6, event_type: 'view', ts: at(12), user_id: 'carol', uid: null, device: null, props: [1, 2], plan: null, amount: null, inserted_at: at(13) },
  // nobody: no user, internal id or device
  { id: 7, event_type: 'view', ts: at(13), user_id: null, uid: null, device: null, props: null, plan: null, amount: null, inserted_at: at(14) },
  // before 1970: not a time we can store
  { id: 8, event_type: 'view', ts: new Date(Date.UTC(1960, 0, 1)), user_id: 'dave', uid: null, device: null, props: null, plan: null, amount: null, inserted_at: at(15) },
  // 1970, before 1971: refused by the write path's strict time rule
  { id: 9, event_type: 'view', ts: new Date(Date.UTC(1970, 5, 1)), user_id: 'dave', uid: null, device: null, props: null, plan: null, amount: null, inserted_at: at(16) },
];

const eventImport = (src: WarehouseSourceHandle, extra: Record<string, unknown> = {}) => ({
  import_type: 'events',
  table_params: { table: src.tableRef('events_src') },
  sync_mode: 'full_sync',
  schedule: 'api_only',
  event_column_name: 'event_type',
  time_column_name: 'ts',
  user_column_name: 'user_id',
  distinct_id_column_name: 'uid',
  device_column_name: 'device',
  json_properties_column_name: 'props',
  ...extra,
});

describe.each(dbKinds())('warehouse sync into %s', (kind) => {
  describe.each(availableWarehouseSources().map((f) => [f.type, f] as const))('from a %s source', (_type, fixture) => {
    let t: TestDb;
    let app: TestApp;
    let p: SeededProject;
    let api: Api;
    let src: WarehouseSourceHandle;
    let worker: InProcessWorker;

    beforeAll(async () => {
      t = await createTestDb(kind);
      src = await fixture.create();
      // Every events read path: on a reader thread that prepares the rows (SQLite source) or only
      // reads them for the writer's side to prepare (BigQuery: a costly client), both into
      // PostgreSQL; on the job's own thread otherwise.
      const readerThread = kind === 'postgres' && (fixture.type === 'sqlite' || fixture.type === 'bigquery');
      app = await startTestApp(t.db, { ...src.serverConfig, WAREHOUSE_READER_THREAD: readerThread ? 'on' : 'off' });
      worker = await startInProcessWorker(t.db, app.config, { queueNames: ['warehouse-sync'] });
      p = await seedProject(t.db);
      api = { url: app.url, basic: p.basic, projectId: p.id };
      await src.createTable({ name: 'events_src', columns: EVENT_COLUMNS });
      await src.insertRows('events_src', [...goodRows, ...badRows]);
    });
    afterAll(async () => {
      await worker?.close();
      await src?.cleanup();
      await app?.queues.queues['warehouse-sync'].obliterate({ force: true });
      await app?.close();
      await t?.destroy();
    });

    /** Triggers a manual sync of `importId` as `who` and waits for the worker to finish it. */
    const sync = async (importId: number, who: Api = api) => {
      const { run_id, job_id } = await manualSync(who, importId);
      const run = await waitForRun(who, importId, run_id);
      return { run_id, job_id, outcome: run.status === 'SUCCEEDED' ? 'succeeded' : `${run.status}: ${run.error}` };
    };

    it('events: maps and stamps every row, reports bad rows, and a second full_sync stores nothing twice', async () => {
      const { importId } = await createSourceAndImport(api, src.sourceBody(), eventImport(src));
      const first = await sync(importId);
      expect(first.outcome).toBe('succeeded');

      // The job carries the run id and nothing else.
      const job = await app.queues.getJob('warehouse-sync', first.job_id);
      expect(job?.data).toEqual({ runId: first.run_id });

      expect(await countEvents(t.db, p.id)).toBe(goodRows.length);
      const events = await pageEvents(t.db, { projectId: p.id, fromMs: 0, toMs: T0 + 86_400_000, limit: 100 });
      const byId = new Map(events.map((e) => [e.event + e.time, e]));
      const signup = byId.get(`signup${at(0).getTime()}`)!;
      expect(signup.distinctId).toBe('alice'); // user id when no internal id
      expect(signup.properties).toMatchObject({
        $user_id: 'alice',
        $device_id: 'd-1',
        browser: 'firefox',
        nested: { a: 1 },
        plan: 'pro',
        amount: 9.5,
        id: 1,
        $warehouse_import_id: String(importId),
        $warehouse_import_job_id: first.job_id,
        $warehouse_import_run_id: first.run_id,
        $import: true,
        $source: 'warehouse-import',
        $warehouse_type: fixture.type,
        $warehouse_table: src.tableRef('events_src'),
      });
      expect(signup.properties).not.toHaveProperty('props');
      expect(signup.properties).not.toHaveProperty('event_type');
      expect(signup.insertId).toMatch(/^[0-9a-f]{32}$/);
      // A row with a user ID and a device ID links the device (docs/identity.md); rows on d-9 stay anonymous.
      expect(await eventStoreOf(t.db).identityOf(p.id, 'alice')).toEqual({ userId: 'alice', deviceIds: ['d-1'] });
      expect(await eventStoreOf(t.db).identityOf(p.id, '$device:d-9')).toEqual({ userId: null, deviceIds: ['d-9'] });
      const login = byId.get(`login${at(5).getTime()}`)!;
      expect(login.properties).not.toHaveProperty('plan'); // null cells are left out
      expect(byId.get(`login${at(7).getTime()}`)!.distinctId).toBe('$device:d-9');
      // A row with a user ID is that user's (simplified ID merge, docs/identity.md), internal id or not.
      expect(byId.get(`purchase${at(9).getTime()}`)!.distinctId).toBe('bob');

      const [run] = await history(api, importId);
      expect(run).toMatchObject({
        run_id: first.run_id,
        job_id: first.job_id,
        trigger: 'manual',
        status: 'SUCCEEDED',
        num_events_imported: goodRows.length,
        rows_read: goodRows.length + badRows.length,
        rows_skipped: badRows.length,
        error: null,
      });
      expect(run.start_time).toMatch(/^\d{4}-/);
      expect(run.end_time).toMatch(/^\d{4}-/);
      const log = run.log.join('\n');
      expect(log).toMatch(/row \d+ rejected: event_type: event name column 'event_type' is null/);
      expect(log).toMatch(/row \d+ rejected: props: JSON column 'props' must hold a JSON object/);
      expect(log).toMatch(/row \d+ rejected: distinct_id: the row has no user ID/);
      expect(log).toMatch(/row \d+ rejected: ts: time column 'ts' holds "1960-01-01.*", before 1970-01-01/);
      expect(log).toMatch(/row \d+ rejected: properties\.time: .*1971/);
      // Row numbers are positions in the read (its order is the source's): five of rows 1–9.
      const rejectedRows = [...log.matchAll(/row (\d+) rejected/g)].map((m) => Number(m[1]));
      expect(new Set(rejectedRows).size).toBe(badRows.length);
      expect(rejectedRows.every((n) => n >= 1 && n <= goodRows.length + badRows.length)).toBe(true);
      expect(log).toMatch(/succeeded: 9 rows read, 4 imported, 0 duplicates, 5 rejected/);

      // Found through the read-back surface by the stamped import and job ids.
      const range = { project_id: p.id, from_date: '2024-05-01', to_date: '2024-05-01' };
      const byImport = await get(`${app.url}/api/2.0/export${qs({ ...range, where: `properties["$warehouse_import_id"] == "${importId}"` })}`, p.basic);
      expect(byImport.status).toBe(200);
      expect(lines(byImport.text).map((l) => l.event).sort()).toEqual(['login', 'login', 'purchase', 'signup']);
      const byJob = await get(`${app.url}/api/2.0/export${qs({ ...range, where: `properties["$warehouse_import_job_id"] == "${first.job_id}"` })}`, p.basic);
      expect(lines(byJob.text)).toHaveLength(goodRows.length);
      const none = await get(`${app.url}/api/2.0/export${qs({ ...range, where: `properties["$warehouse_import_job_id"] == "warehouse-sync-other"` })}`, p.basic);
      expect(lines(none.text)).toHaveLength(0);
      const insights = await get(
        `${app.url}/api/app/projects/${p.id}/insights${qs({ from_date: '2024-05-01', to_date: '2024-05-01', unit: 'day', on: '$warehouse_import_job_id', where: `properties["$warehouse_import_id"] == "${importId}"` })}`,
        p.basic,
      );
      expect(insights.status).toBe(200);
      expect(insights.json().results.values).toEqual({ [first.job_id]: { '2024-05-01': goodRows.length } });

      const second = await sync(importId);
      expect(second.outcome).toBe('succeeded');
      expect(second.run_id).not.toBe(first.run_id);
      expect(await countEvents(t.db, p.id)).toBe(goodRows.length);
      const [again] = await history(api, importId);
      expect(again).toMatchObject({ run_id: second.run_id, status: 'SUCCEEDED', num_events_imported: 0, num_deduplicated: goodRows.length });
    });

    it('events time_based: a run reads the rows at or after the watermark, and imports only the new', async () => {
      const q = await seedProject(t.db);
      const qa: Api = { ...api, basic: q.basic, projectId: q.id };
      await src.createTable({ name: 'tb_events', columns: EVENT_COLUMNS });
      await src.insertRows('tb_events', goodRows);
      const { importId } = await createSourceAndImport(
        qa,
        src.sourceBody(),
        eventImport(src, { table_params: { table: src.tableRef('tb_events') }, sync_mode: 'time_based', insert_time_column_name: 'inserted_at' }),
      );
      const qsync = async () => (await sync(importId, qa)).outcome;
      expect(await qsync()).toBe('succeeded');
      expect(await countEvents(t.db, q.id)).toBe(4);
      const imp = await call(qa, 'GET', `/imports/${importId}`);
      expect(imp.body.results.watermark).toBeTruthy();

      await src.insertRows('tb_events', [
        { id: 20, event_type: 'late', ts: at(30), user_id: 'erin', uid: null, device: null, props: null, plan: null, amount: null, inserted_at: at(31) },
        { id: 21, event_type: 'late', ts: at(32), user_id: 'erin', uid: null, device: null, props: null, plan: null, amount: null, inserted_at: at(33) },
      ]);
      expect(await qsync()).toBe('succeeded');
      const [latest] = await history(qa, importId);
      // The row at the watermark (id 9) is read again, and known already.
      expect(latest).toMatchObject({ status: 'SUCCEEDED', rows_read: 3, num_events_imported: 2, num_deduplicated: 1 });
      expect(await countEvents(t.db, q.id)).toBe(6);
      // A row loaded later with the same insert time as the newest one read is still imported.
      await src.insertRows('tb_events', [{ id: 22, event_type: 'late', ts: at(34), user_id: 'erin', uid: null, device: null, props: null, plan: null, amount: null, inserted_at: at(33) }]);
      expect(await qsync()).toBe('succeeded');
      expect((await history(qa, importId))[0]).toMatchObject({ rows_read: 2, num_events_imported: 1, num_deduplicated: 1 });
      expect(await countEvents(t.db, q.id)).toBe(7);
      expect(await qsync()).toBe('succeeded');
      expect((await history(qa, importId))[0]).toMatchObject({ rows_read: 2, num_events_imported: 0, num_deduplicated: 2 });
    });

    it('events from a SELECT query with a fixed event name and an insert id column', async () => {
      const q = await seedProject(t.db);
      const qa: Api = { ...api, basic: q.basic, projectId: q.id };
      const { importId } = await createSourceAndImport(qa, src.sourceBody(), {
        import_type: 'events',
        table_params: { query: `SELECT id, ts, user_id, plan FROM ${src.tableRef('events_src')} WHERE user_id = 'alice';` },
        sync_mode: 'one_time',
        event_name: 'Imported Alice Event',
        time_column_name: 'ts',
        user_column_name: 'user_id',
        insert_id_column_name: 'id',
      });
      expect((await sync(importId, qa)).outcome).toBe('succeeded');
      const events = await pageEvents(t.db, { projectId: q.id, fromMs: 0, toMs: T0 + 86_400_000, limit: 10 });
      expect(events.map((e) => [e.event, e.insertId, e.distinctId]).sort()).toEqual([
        ['Imported Alice Event', '1', 'alice'],
        ['Imported Alice Event', '2', 'alice'],
      ]);
      expect(events[0]!.properties.$warehouse_table).toBe('(query)');
      // one_time: done once.
      const again = await call(qa, 'PUT', `/imports/${importId}/manual-sync`);
      expect(again.status).toBe(400);
      expect(again.body.error).toMatch(/one_time/);
    });

    it('people: the latest row per user wins (ties broken deterministically, nulls last), null user IDs excluded', async () => {
      await src.createTable({
        name: 'users',
        columns: [
          { name: 'user_id', type: 'text' },
          { name: 'updated_at', type: 'timestamp' },
          { name: 'name', type: 'text' },
          { name: 'plan', type: 'text' },
          { name: 'traits', type: 'json' },
        ],
      });
      await src.insertRows('users', [
        { user_id: 'u1', updated_at: at(1), name: 'Old', plan: 'free', traits: { city: 'Oslo' } },
        { user_id: 'u1', updated_at: at(2), name: 'New', plan: 'pro', traits: { city: 'Paris', age: 30 } },
        { user_id: 'u2', updated_at: at(3), name: 'Alpha', plan: 'a', traits: null },
        { user_id: 'u2', updated_at: at(3), name: 'Beta', plan: 'b', traits: null },
        { user_id: 'u3', updated_at: null, name: 'NoTime', plan: 'x', traits: null },
        { user_id: 'u3', updated_at: at(0), name: 'Timed', plan: 'y', traits: null },
        { user_id: null, updated_at: at(9), name: 'Nobody', plan: 'z', traits: null },
      ]);
      const { importId } = await createSourceAndImport(api, src.sourceBody(), {
        import_type: 'people',
        table_params: { table: src.tableRef('users') },
        sync_mode: 'full_sync',
        schedule: 'api_only',
        user_column_name: 'user_id',
        time_column_name: 'updated_at',
        json_properties_column_name: ['traits'],
      });
      expect((await sync(importId)).outcome).toBe('succeeded');
      const [run] = await history(api, importId);
      expect(run).toMatchObject({ status: 'SUCCEEDED', rows_read: 3, rows_skipped: 0, num_events_imported: 3 });

      const u1 = await findProfile(t.db, p.id, { kind: 'user', distinctId: 'u1' });
      expect(u1?.properties).toMatchObject({ name: 'New', plan: 'pro', city: 'Paris', age: 30 });
      expect(u1?.properties).not.toHaveProperty('updated_at');
      expect(u1?.properties).not.toHaveProperty('traits');
      // A tie on updated_at: the row with the greater other columns (by name, as text) wins.
      expect((await findProfile(t.db, p.id, { kind: 'user', distinctId: 'u2' }))?.properties).toMatchObject({ name: 'Beta', plan: 'b' });
      // A null time loses to any time.
      expect((await findProfile(t.db, p.id, { kind: 'user', distinctId: 'u3' }))?.properties).toMatchObject({ name: 'Timed' });
      expect(await countProfiles(t.db, 'user', p.id)).toBe(3);
    });

    it('groups: the latest row per group ID, applied as $set under the group key', async () => {
      await src.createTable({
        name: 'companies',
        columns: [
          { name: 'company_id', type: 'text' },
          { name: 'updated_at', type: 'timestamp' },
          { name: 'name', type: 'text' },
          { name: 'seats', type: 'integer' },
        ],
      });
      await src.insertRows('companies', [
        { company_id: 'acme', updated_at: at(1), name: 'Acme Old', seats: 5 },
        { company_id: 'acme', updated_at: at(4), name: 'Acme', seats: 50 },
        { company_id: 'globex', updated_at: at(2), name: 'Globex', seats: 7 },
        { company_id: null, updated_at: at(3), name: 'Nobody', seats: 1 },
      ]);
      const { importId } = await createSourceAndImport(api, src.sourceBody(), {
        import_type: 'groups',
        table_params: { table: src.tableRef('companies') },
        sync_mode: 'full_sync',
        schedule: 'api_only',
        group_key: 'company_id',
        group_id_column: 'company_id',
        time_column_name: 'updated_at',
      });
      expect((await sync(importId)).outcome).toBe('succeeded');
      const acme = await findProfile(t.db, p.id, { kind: 'group', groupKey: 'company_id', groupId: 'acme' });
      expect(acme?.properties).toMatchObject({ name: 'Acme', seats: 50 });
      expect(await countProfiles(t.db, 'group', p.id)).toBe(2);
    });

    it('lookup tables: the whole table replaces the lookup table', async () => {
      const created = await fetch(`${app.url}/api/app/projects/${p.id}/lookup-tables`, {
        method: 'POST',
        headers: { authorization: p.basic, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `plans-${fixture.type}` }),
      });
      expect(created.status).toBe(200);
      const lookupId = (await created.json()).results.id as number;
      await src.createTable({
        name: 'plans',
        columns: [
          { name: 'plan_id', type: 'text' },
          { name: 'label', type: 'text' },
          { name: 'price', type: 'real' },
        ],
      });
      await src.insertRows('plans', [
        { plan_id: 'pro', label: 'Pro, yearly', price: 99.5 },
        { plan_id: 'free', label: 'Free "forever"', price: 0 },
        { plan_id: null, label: 'orphan', price: 1 },
      ]);
      const { importId } = await createSourceAndImport(api, src.sourceBody(), {
        import_type: 'lookup_table',
        table_params: { table: src.tableRef('plans') },
        sync_mode: 'full_sync',
        schedule: 'api_only',
        property_key_column_name: 'plan_id',
        lookup_table_id: lookupId,
      });
      expect((await sync(importId)).outcome).toBe('succeeded');
      const rows = await t.db('lookup_rows').where({ lookup_table_id: lookupId }).orderBy('key');
      expect(rows.map((r) => [r.key, typeof r.properties === 'string' ? JSON.parse(r.properties) : r.properties])).toEqual([
        ['free', { label: 'Free "forever"', price: 0 }],
        ['pro', { label: 'Pro, yearly', price: 99.5 }],
      ]);
      const [run] = await history(api, importId);
      expect(run).toMatchObject({ status: 'SUCCEEDED', rows_read: 3, rows_skipped: 1, num_events_imported: 2 });

      // A key the lookup table cannot hold fails the whole replace: the old rows stay, and the
      // failure says how much was read (the run's counters are only written on success).
      await src.insertRows('plans', [
        { plan_id: 'k'.repeat(256), label: 'too long', price: 2 },
        { plan_id: 'pro', label: 'Pro again', price: 3 },
      ]);
      const failed = await sync(importId);
      // Rows are numbered as read; some sources read them in no fixed order.
      expect(failed.outcome).toMatch(
        /^FAILED: the lookup table was not replaced \(5 rows read, 1 rejected\): 2 row\(s\) failed validation; the lookup table was not changed \(row [1-5]: the key is longer than 255 characters; row [1-5]: duplicate key 'pro' \(first in row [1-5]\)\)$/,
      );
      expect(Number((await t.db('lookup_rows').where({ lookup_table_id: lookupId }).count({ n: '*' }))[0]!.n)).toBe(2);
    });
  });
});
