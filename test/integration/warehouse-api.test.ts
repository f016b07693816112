/**
 * The warehouse API over HTTP, on both stores: sources (connection test, sealed config, never
 * returned), imports (zod and source-schema validation), PATCH/DELETE, manual-sync (race-safe:
 * concurrent triggers get one run), auth (401/403/404 shapes) and what reaches Redis.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantServiceAccount, createServiceAccount } from '../../src/accounts/accounts.service.js';
import { createSecretBox, secretsKeyFrom } from '../../src/lib/secrets.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { crossKinds, redisOverrides } from '../helpers/redis-kinds.js';
import { sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { call, type Api } from '../helpers/warehouse.js';

describe.each(crossKinds(dbKinds()))('warehouse API on %s, queues on %s', (kind, redisKind) => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;
  let api: Api;
  let src: WarehouseSourceHandle;
  let sourceId: number;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'warehouse-api-'));

  beforeAll(async () => {
    t = await createTestDb(kind);
    // The service's own database file, so a source naming it can be refused.
    app = await startTestApp(t.db, { ...redisOverrides(redisKind), ...(kind === 'sqlite' ? { DATABASE_URL: t.url } : {}) });
    p = await seedProject(t.db);
    api = { url: app.url, basic: p.basic, projectId: p.id };
    src = await sqliteSourceFixture.create();
    await src.createTable({
      name: 'ev',
      columns: [
        { name: 'name', type: 'text' },
        { name: 'ts', type: 'timestamp', notNull: true },
        { name: 'loose_ts', type: 'timestamp' },
        { name: 'user_id', type: 'text' },
      ],
    });
    await src.insertRows('ev', [{ name: 'a', ts: new Date(Date.UTC(2024, 0, 1)), loose_ts: null, user_id: 'u' }]);
    const created = await call(api, 'POST', '', src.sourceBody('main'));
    expect(created.status).toBe(200);
    sourceId = created.body.results.id;
  });
  afterAll(async () => {
    await src?.cleanup();
    await app?.queues.queues['warehouse-sync'].obliterate({ force: true });
    await app?.close();
    await t?.destroy();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const importBody = (extra: Record<string, unknown> = {}) => ({
    warehouse_source_id: sourceId,
    import_type: 'events',
    table_params: { table: 'ev' },
    sync_mode: 'full_sync',
    schedule: 'api_only',
    event_column_name: 'name',
    time_column_name: 'ts',
    user_column_name: 'user_id',
    ...extra,
  });

  describe('sources', () => {
    it('creates a source after a connection test; answers id, type, name, created and never the config', async () => {
      const res = await call(api, 'POST', '', src.sourceBody('demo'));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok', results: { id: expect.any(Number), type: 'sqlite', name: 'demo', created: expect.stringMatching(/^\d{4}-/) } });
      const list = await call(api, 'GET', '');
      expect(list.body.results.map((s: any) => s.id)).toContain(res.body.results.id);
      expect(JSON.stringify(list.body)).not.toContain(src.sourceBody().config.path as string);
      const one = await call(api, 'GET', `/${res.body.results.id}`);
      expect(one.body.results).toEqual(res.body.results);
    });

    it('seals the config at rest (postgres password never stored, returned or queued in clear)', async () => {
      if (!process.env.TEST_DATABASE_URL) return;
      const url = new URL(process.env.TEST_DATABASE_URL);
      url.password = 'not-needed-by-trust-auth-s3cr3t';
      const res = await call(api, 'POST', '', { type: 'postgres', name: 'pg', config: { connection_string: url.toString() } });
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body)).not.toContain('s3cr3t');
      const row = await t.db('warehouse_sources').where({ id: res.body.results.id }).first();
      expect(row.config_sealed).not.toContain('s3cr3t');
      const opened = JSON.parse(createSecretBox(secretsKeyFrom(app.config.SECRETS_KEY)).open(row.config_sealed));
      expect(opened.connection_string).toContain('s3cr3t');
    });

    it('a failing connection test is a 400 that says why', async () => {
      const notDb = path.join(tmp, 'not-a-db.sqlite');
      fs.writeFileSync(notDb, 'this is not sqlite, just text that is long enough to not be a header at all');
      const cases: [unknown, RegExp][] = [
        [{ type: 'sqlite', name: 'x', config: { path: path.join(tmp, 'missing.sqlite') } }, /connection test failed: SQLite file not found/],
        [{ type: 'sqlite', name: 'x', config: { path: 'relative.sqlite' } }, /config\.path must be an absolute path/],
        [{ type: 'sqlite', name: 'x', config: { path: notDb } }, /connection test failed: .*not a (readable SQLite )?database/],
        [{ type: 'sqlite', name: 'x', config: {} }, /config\.path/],
        [{ type: 'sqlite', name: 'x', config: { path: '/x', extra: 1 } }, /^unknown field 'extra' in config$/],
        [{ type: 'postgres', name: 'x', config: { connection_string: 'postgres://nobody@127.0.0.1:1/none' } }, /connection test failed: cannot connect to PostgreSQL/],
        [{ type: 'postgres', name: 'x', config: { connection_string: 'mysql://x' } }, /must start with postgres:\/\//],
        // The field is named once, not once by the check and again by the validator.
        [{ type: 'postgres', name: 'x', config: { connection_string: 'postgres://u@h/db?sslmode=bogus' } }, /^config\.connection_string: sslmode must be one of /],
        [{ type: 'oracle', name: 'x', config: {} }, /type must be one of sqlite, postgres/],
        [{ name: 'x', config: {} }, /type is required/],
        [{ type: 'sqlite', name: 'x' }, /config must be a JSON object/],
      ];
      if (kind === 'sqlite') cases.push([{ type: 'sqlite', name: 'x', config: { path: path.resolve(t.url) } }, /this service's own database/]);
      for (const [body, message] of cases) {
        const res = await call(api, 'POST', '', body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.status).toBe('error');
        expect(res.body.error).toMatch(message);
      }
      expect((await call(api, 'POST', '', '{"type":')).status).toBe(400);
      const form = await call(api, 'POST', '', 'a=b', { 'content-type': 'application/x-www-form-urlencoded' });
      expect(form.status).toBe(415);
      expect((await t.db('warehouse_sources').where({ project_id: p.id }).count({ n: '*' }).first())!.n).toSatisfy((n: unknown) => Number(n) === 2 || Number(n) === 3);
    });

    it('401 without credentials, 403 for analysts writing and for other projects, 404 for unknown ids', async () => {
      const noAuth = await fetch(`${app.url}/api/app/projects/${p.id}/warehouse-sources`);
      expect(noAuth.status).toBe(401);
      expect(await noAuth.json()).toEqual({ status: 'error', error: expect.any(String) });
      const analyst = await createServiceAccount(t.db, { username: `analyst-${kind}`, projectId: p.id, role: 'analyst' });
      const asAnalyst: Api = { ...api, basic: basicAuth(analyst.username, analyst.secret) };
      expect((await call(asAnalyst, 'GET', '')).status).toBe(200);
      const denied = await call(asAnalyst, 'POST', '', src.sourceBody());
      expect(denied.status).toBe(403);
      expect(denied.body).toEqual({ status: 'error', error: expect.stringMatching(/owner or admin/) });
      const other = await seedProject(t.db);
      const cross = await call({ ...api, basic: other.basic }, 'GET', '');
      expect(cross.status).toBe(403);
      const missing = await call(api, 'GET', '/999999');
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({ status: 'error', error: expect.stringMatching(/not found/) });
      expect((await call(api, 'GET', '/abc')).status).toBe(404);
      // Beyond PostgreSQL's integer ids: unknown like any other, not a 500 ("out of range").
      expect((await call(api, 'GET', '/2147483648')).status).toBe(404);
      expect((await call(api, 'PUT', '/imports/2147483648/manual-sync')).status).toBe(404);
      expect((await call({ ...api, projectId: 2147483648 }, 'GET', '')).status).toBe(403);
      await grantServiceAccount(t.db, { username: analyst.username, projectId: other.id, role: 'admin' });
      expect((await call({ ...asAnalyst, projectId: other.id }, 'GET', `/${sourceId}`)).status).toBe(404);
    });

    it('refuses a project of another data residency with 400 naming its region, and stores nothing', async () => {
      const eu = await seedProject(t.db, { residency: 'EU' });
      const asEu: Api = { ...api, basic: eu.basic, projectId: eu.id };
      const res = await call(asEu, 'POST', '', src.sourceBody('eu'));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ status: 'error', type: 'validation_error', error: expect.stringMatching(/residency EU.*EU/) });
      expect(await t.db('warehouse_sources').where({ project_id: eu.id }).first()).toBeUndefined();
      expect((await call(asEu, 'GET', '/imports')).status).toBe(400);
    });

    it('a NUL or an unpaired surrogate in a name is a 400 naming the field, and nothing is stored', async () => {
      const before = (await t.db('warehouse_sources').where({ project_id: p.id }).count({ n: '*' }).first())!.n;
      const body = src.sourceBody('x');
      for (const name of ['nul\u0000', '\ud800lone']) {
        const res = await call(api, 'POST', '', JSON.stringify({ ...body, name }));
        expect(res.status, JSON.stringify(name)).toBe(400);
        expect(res.body).toMatchObject({ status: 'error', type: 'validation_error', error: expect.stringMatching(/'name'.*NUL character or an unpaired surrogate/) });
      }
      expect((await t.db('warehouse_sources').where({ project_id: p.id }).count({ n: '*' }).first())!.n).toBe(before);
      // A 255-character limit is named as such, not as a wrong type.
      const long = await call(api, 'POST', '', { ...body, name: 'n'.repeat(256) });
      expect(long.status).toBe(400);
      expect(long.body.error).toMatch(/name must be at most 255 characters/);
    });
  });

  describe('imports', () => {
    it('creates, lists, reads, patches and deletes an import in Mixpanel field names', async () => {
      const created = await call(api, 'POST', '/imports', importBody({ schedule: 'hourly', json_properties_column_name: [] }));
      expect(created.status).toBe(200);
      const id = created.body.results.id;
      expect(created.body.results).toMatchObject({
        id,
        warehouse_source_id: sourceId,
        import_type: 'events',
        table_params: { table: 'ev' },
        sync_mode: 'full_sync',
        schedule: 'hourly',
        paused: false,
        event_column_name: 'name',
        time_column_name: 'ts',
        user_column_name: 'user_id',
      });
      expect((await call(api, 'GET', '/imports')).body.results.map((i: any) => i.id)).toContain(id);
      const patched = await call(api, 'PATCH', `/imports/${id}`, { paused: true, schedule: '15 3 * * *' });
      expect(patched.status).toBe(200);
      expect(patched.body.results).toMatchObject({ paused: true, schedule: '15 3 * * *' });
      expect((await call(api, 'PATCH', `/imports/${id}`, { schedule: 'sometimes' })).body.error).toMatch(/schedule must be/);
      expect((await call(api, 'PATCH', `/imports/${id}`, { sync_mode: 'time_based' })).body.error).toMatch(/only paused and schedule can be changed/);
      const del = await call(api, 'DELETE', `/imports/${id}`);
      expect(del.body).toEqual({ status: 'ok', results: { id, deleted: true } });
      expect((await call(api, 'GET', `/imports/${id}`)).status).toBe(404);
    });

    it('validates against the source: missing table, unknown columns, nullable time with full_sync', async () => {
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ table_params: { table: 'nope' } }, /table_params: table not found: nope/],
        [{ user_column_name: 'who' }, /user_column_name: column 'who' does not exist in the source \(columns: name, ts, loose_ts, user_id\)/],
        [{ time_column_name: 'loose_ts' }, /column 'loose_ts' is nullable in the source; full_sync needs a NOT NULL event time column/],
        [{ table_params: { query: 'SELECT name, loose_ts AS ts, user_id FROM ev' } }, /column 'ts' is nullable/],
        [{ table_params: { query: 'SELECT * FROM ev WHERE' } }, /table_params: the source rejected the query: .*syntax error/],
        [{ warehouse_source_id: 987654 }, /warehouse source 987654 does not exist in project/],
        [{ import_type: 'movies' }, /import_type must be one of events, people, groups, lookup_table/],
        [{ colour: 'red' }, /unknown field 'colour'/],
        [{ time_column_name: 5 }, /time_column_name must be a column name/],
        [{ import_type: 'lookup_table', event_column_name: undefined, time_column_name: undefined, user_column_name: undefined, property_key_column_name: 'name', lookup_table_id: 424242 }, /lookup table 424242 does not exist/],
      ];
      for (const [extra, message] of cases) {
        const res = await call(api, 'POST', '/imports', importBody(extra));
        expect(res.status, JSON.stringify(extra)).toBe(400);
        expect(res.body.error).toMatch(message);
        expect(res.body.problems, JSON.stringify(extra)).toEqual(expect.arrayContaining([expect.stringMatching(message)]));
      }
      // A query whose time column comes straight from a NOT NULL column is fine for full_sync.
      const ok = await call(api, 'POST', '/imports', importBody({ table_params: { query: 'SELECT name, ts, user_id FROM ev' } }));
      expect(ok.status).toBe(200);
      // time_based accepts a nullable time column.
      const tb = await call(api, 'POST', '/imports', importBody({ sync_mode: 'time_based', insert_time_column_name: 'ts', time_column_name: 'loose_ts' }));
      expect(tb.status).toBe(200);
    });

    it('refuses projects that are not on simplified ID merge', async () => {
      const orig = await seedProject(t.db, { idMerge: 'original' });
      const oa: Api = { url: app.url, basic: orig.basic, projectId: orig.id };
      const s = await call(oa, 'POST', '', src.sourceBody());
      const res = await call(oa, 'POST', '/imports', importBody({ warehouse_source_id: s.body.results.id }));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/original ID merge system; warehouse imports need a project on the simplified ID merge system/);
    });

    it('deleting a source deletes its imports', async () => {
      const s = await call(api, 'POST', '', src.sourceBody('doomed'));
      const imp = await call(api, 'POST', '/imports', importBody({ warehouse_source_id: s.body.results.id }));
      expect((await call(api, 'DELETE', `/${s.body.results.id}`)).status).toBe(200);
      expect((await call(api, 'GET', `/imports/${imp.body.results.id}`)).status).toBe(404);
    });
  });

  describe('manual sync', () => {
    it('concurrent triggers get one run and one job; the job carries only the run id', async () => {
      const imp = await call(api, 'POST', '/imports', importBody());
      const id = imp.body.results.id;
      const answers = await Promise.all(Array.from({ length: 12 }, () => call(api, 'PUT', `/imports/${id}/manual-sync`)));
      for (const a of answers) expect(a.status).toBe(200);
      const runIds = new Set(answers.map((a) => a.body.results.run_id));
      expect(runIds.size).toBe(1);
      const { run_id, job_id } = answers[0]!.body.results;
      expect(answers[0]!.body).toEqual({ status: 'ok', results: { run_id, job_id, status: 'QUEUED' } });
      expect(await t.db('sync_runs').where({ import_id: id }).count({ n: '*' }).first()).toSatisfy((r: any) => Number(r.n) === 1);
      const counts = await app.queues.queues['warehouse-sync'].getJobCounts('waiting', 'delayed', 'active');
      expect(counts.waiting).toBeGreaterThanOrEqual(1);
      // Read the job straight from Redis: ids only, nothing from the source config.
      const raw = await app.queues.connection.hget(`${app.queues.prefix}:warehouse-sync:${job_id}`, 'data');
      expect(JSON.parse(raw!)).toEqual({ runId: run_id });
      const history = await call(api, 'GET', `/imports/${id}/history`);
      expect(history.body.results.runs).toEqual([
        expect.objectContaining({ run_id, job_id, trigger: 'manual', status: 'QUEUED', start_time: null, end_time: null, num_events_imported: 0, rows_read: 0, rows_skipped: 0, error: null, log: [expect.stringMatching(/manual sync queued/)] }),
      ]);
    });

    it('answers 401, 403 and 404 as {status:"error", error}', async () => {
      const imp = await call(api, 'POST', '/imports', importBody());
      const url = `${app.url}/api/app/projects/${p.id}/warehouse-sources/imports/${imp.body.results.id}/manual-sync`;
      const noAuth = await fetch(url, { method: 'PUT' });
      expect(noAuth.status).toBe(401);
      expect(await noAuth.json()).toEqual({ status: 'error', error: expect.any(String) });
      const wrong = await fetch(url, { method: 'PUT', headers: { authorization: basicAuth('nobody', 'nothing') } });
      expect(wrong.status).toBe(401);
      const consumer = await createServiceAccount(t.db, { username: `consumer-${kind}`, projectId: p.id, role: 'consumer' });
      const forbidden = await fetch(url, { method: 'PUT', headers: { authorization: basicAuth(consumer.username, consumer.secret) } });
      expect(forbidden.status).toBe(403);
      expect(await forbidden.json()).toEqual({ status: 'error', error: expect.any(String) });
      const missing = await call(api, 'PUT', '/imports/777777/manual-sync');
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({ status: 'error', error: 'warehouse import 777777 not found in project ' + p.id });
      expect((await call(api, 'GET', '/imports/777777/history')).status).toBe(404);
      // A limit that is not an integer in range is refused, not clamped into some other answer.
      for (const limit of ['abc', '-1', '1.5', '0', '1001']) {
        const refused = await call(api, 'GET', `/imports/${imp.body.results.id}/history?limit=${limit}`);
        expect(refused.status).toBe(400);
        expect(refused.body).toMatchObject({ status: 'error', error: expect.stringContaining("'limit'") });
      }
      expect((await call(api, 'GET', `/imports/${imp.body.results.id}/history?limit=1000`)).status).toBe(200);
    });
  });
});
