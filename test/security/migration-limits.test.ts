/**
 * Hostile tenant, finding 9: migrations started with the project token alone, as many as anyone
 * posted. One migration is active per project (a different one while it is queued or running is a
 * 409 naming it, the same one posted again too), also under concurrent posts, on every store;
 * MIGRATION_REQUIRE_AUTH=true also needs the project secret or an owner/admin service account.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceAccount } from '../../src/accounts/accounts.service.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

const body = (p: SeededProject, start: string, end: string) => ({
  SOURCE_TOOL_API_KEY: 'k',
  SOURCE_TOOL_API_SECRET: 'very-secret-value',
  SERVICE_TOKEN: p.token,
  START_DATE: start,
  END_DATE: end,
});

async function post(app: TestApp, payload: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${app.url}/migrate/amplitude`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(payload) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe.each(dbKinds())('one active migration per project on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { AMPLITUDE_US_URL: 'http://127.0.0.1:9' });
  });
  afterAll(async () => {
    await app?.queues.queues.migration.obliterate({ force: true });
    await app?.close();
    await t?.destroy();
  });

  it('a second migration while one is active, different or the same again, is a 409 naming it', async () => {
    const p = await seedProject(t.db);
    const first = await post(app, body(p, '2024-05-01', '2024-05-03'));
    expect(first.status).toBe(202);
    const id = first.body.results.migration_id;
    const other = await post(app, body(p, '2024-06-01', '2024-06-02'));
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ status: 'error', error: expect.stringContaining(id), active_migration_id: id });
    const same = await post(app, body(p, '2024-05-01', '2024-05-03'));
    expect(same.status).toBe(409);
    expect(same.body).toMatchObject({ status: 'error', error: expect.stringMatching(/this same migration/), active_migration_id: id });
    // Another project is not affected.
    const q = await seedProject(t.db);
    expect((await post(app, body(q, '2024-06-01', '2024-06-02'))).status).toBe(202);
    // Once the active one has finished, the next may start.
    await t.db('migrations').where({ id }).update({ status: 'succeeded' });
    expect((await post(app, body(p, '2024-06-01', '2024-06-02'))).status).toBe(202);
  });

  it('concurrent posts of different migrations start exactly one', async () => {
    const p = await seedProject(t.db);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => post(app, body(p, `2024-0${i + 1}-01`, `2024-0${i + 1}-02`))));
    expect(results.map((r) => r.status).sort()).toEqual([202, 409, 409, 409, 409, 409]);
    expect(await t.db('migrations').where({ project_id: p.id }).count({ n: '*' }).first()).toMatchObject({ n: kind === 'postgres' ? '1' : 1 });
  });
});

describe('MIGRATION_REQUIRE_AUTH', () => {
  let t: TestDb;
  let strict: TestApp;
  let open: TestApp;

  beforeAll(async () => {
    t = await createTestDb('sqlite');
    strict = await startTestApp(t.db, { AMPLITUDE_US_URL: 'http://127.0.0.1:9', MIGRATION_REQUIRE_AUTH: true });
    open = await startTestApp(t.db, { AMPLITUDE_US_URL: 'http://127.0.0.1:9' });
  });
  afterAll(async () => {
    await strict?.queues.queues.migration.obliterate({ force: true });
    await open?.queues.queues.migration.obliterate({ force: true });
    await strict?.close();
    await open?.close();
    await t?.destroy();
  });

  it('is off by default: the token in the body is enough', async () => {
    const p = await seedProject(t.db);
    expect((await post(open, body(p, '2024-05-01', '2024-05-01'))).status).toBe(202);
  });

  it('when on: 401 without credentials or with the token, 403 for a non-admin role or another project, 202 for the secret or an owner/admin', async () => {
    const p = await seedProject(t.db);
    const other = await seedProject(t.db);
    const analyst = await seedProject(t.db, { role: 'analyst' });
    const none = await post(strict, body(p, '2024-05-01', '2024-05-01'));
    expect(none).toMatchObject({ status: 401, body: { status: 'error' } });
    expect((await post(strict, body(p, '2024-05-01', '2024-05-01'), { authorization: basicAuth(p.token) })).status).toBe(401);
    const foreign = await post(strict, body(p, '2024-05-01', '2024-05-01'), { authorization: other.basic });
    expect(foreign).toMatchObject({ status: 403, body: { status: 'error' } });
    const lowRole = await post(strict, body(analyst, '2024-05-01', '2024-05-01'), { authorization: analyst.basic });
    expect(lowRole.status).toBe(403);
    expect(lowRole.body.error).toMatch(/owner or admin/);
    expect(await t.db('migrations').whereIn('project_id', [p.id, analyst.id]).count({ n: '*' }).first()).toMatchObject({ n: 0 });

    const bySecret = await post(strict, body(p, '2024-05-01', '2024-05-01'), { authorization: basicAuth(p.api_secret) });
    expect(bySecret.status).toBe(202);
    const q = await seedProject(t.db);
    const admin = await createServiceAccount(t.db, { username: `admin-${q.id}`, projectId: q.id, role: 'admin' });
    expect((await post(strict, body(q, '2024-05-01', '2024-05-01'), { authorization: basicAuth(admin.username, admin.secret) })).status).toBe(202);
  });
});
