/**
 * The migration endpoints' edges: every refusal is a 4xx in the app error shape with a clear
 * message, nothing is written for a refused request, credentials never come back, and the
 * progress endpoints authenticate and scope by project.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProject, basicAuth, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

describe.each(dbKinds())('migration HTTP API on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);

  beforeAll(async () => {
    t = await createTestDb(kind);
    // Nothing runs the jobs here: only the HTTP side is under test.
    app = await startTestApp(t.db, { AMPLITUDE_US_URL: 'http://127.0.0.1:9' });
    p = await seedProject(t.db);
  });
  afterAll(async () => {
    await app.queues.queues.migration.obliterate({ force: true });
    await app.close();
    await t.destroy();
  });

  async function post(body: unknown, path = '/migrate/amplitude', headers: Record<string, string> = { 'content-type': 'application/json' }) {
    const res = await fetch(`${app.url}${path}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }
  const good = () => ({ SOURCE_TOOL_API_KEY: 'k', SOURCE_TOOL_API_SECRET: 'very-secret-value', SERVICE_TOKEN: p.token });
  const migrationRows = async () => Number((await t.db('migrations').count({ n: '*' }).first())!.n);

  it('starts a migration: 202, defaults to the last 30 days, one count job per day with ids only', async () => {
    const res = await post({ AMPLITUDE_API_KEY: 'k', AMPLITUDE_API_SECRET: 'very-secret-value', MIXPANEL_TOKEN: p.token });
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('ok');
    expect(res.body.results).toMatchObject({ status: 'queued', end_date: yesterday, dry_run: false });
    const days = (Date.parse(res.body.results.end_date) - Date.parse(res.body.results.start_date)) / 86_400_000 + 1;
    expect(days).toBe(30);
    const jobs = await app.queues.queues.migration.getJobs(['waiting']);
    const mine = jobs.filter((j) => j.data.migrationId === res.body.results.migration_id);
    expect(mine).toHaveLength(30);
    expect(mine[0]!.id).toMatch(new RegExp(`^migration-${res.body.results.migration_id}-\\d{4}-\\d{2}-\\d{2}-count$`));
    expect(Object.keys(mine[0]!.data).sort()).toEqual(['day', 'migrationId']);
    // The secret is stored sealed, and nowhere in Redis.
    const row = await t.db('migrations').where({ id: res.body.results.migration_id }).first();
    expect(row.credentials).not.toContain('very-secret-value');
    expect(JSON.stringify(jobs.map((j) => j.data))).not.toContain('very-secret-value');
  });

  it('refuses bad requests with 4xx and a clear message, writing nothing', async () => {
    const before = await migrationRows();
    const unknown = await post(good(), '/migrate/heap');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ status: 'error', error: expect.stringMatching(/unknown source tool 'heap'; supported: amplitude/), supported: ['amplitude'] });

    const cases: [unknown, number, RegExp][] = [
      [{ ...good(), START_DATE: '2024-05-10', END_DATE: '2024-05-01' }, 400, /'START_DATE' 2024-05-10 is after 'END_DATE' 2024-05-01/],
      [{ ...good(), START_DATE: '2024-5-1' }, 400, /'START_DATE' must be a calendar date/],
      [{ ...good(), START_DATE: '2022-01-01', END_DATE: '2023-06-01' }, 400, /at most 365 days/],
      [{ ...good(), DRY_RUN: 'maybe' }, 400, /DRY_RUN/],
      [{ SOURCE_TOOL_API_KEY: 'k', SERVICE_TOKEN: p.token }, 400, /'SOURCE_TOOL_API_SECRET' \(or 'AMPLITUDE_API_SECRET'\) is required/],
      [{ ...good(), SERVICE_TOKEN: 'no-such-token' }, 401, /SERVICE_TOKEN/],
      ['{"SOURCE_TOOL_API_KEY":', 400, /not valid JSON/],
      ['', 400, /JSON object/],
    ];
    for (const [body, status, message] of cases) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.status).toBe('error');
      expect(res.body.error).toMatch(message);
    }
    const form = await post('a=b', '/migrate/amplitude', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(415);
    expect(await migrationRows()).toBe(before);
  });

  it('refuses projects on original ID merge and projects of another residency, saying why', async () => {
    const original = await seedProject(t.db, { idMerge: 'original' });
    const res = await post({ ...good(), SERVICE_TOKEN: original.token });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/original ID merge system; migrated data needs the simplified ID merge system/);
    const eu = await seedProject(t.db, { residency: 'EU' });
    const res2 = await post({ ...good(), SERVICE_TOKEN: eu.token });
    expect(res2.status).toBe(400);
    expect(res2.body.error).toMatch(/EU data residency but this deployment serves US; send the migration to the EU deployment/);
  });

  // One migration is active per project: earlier tests' runs (never worked on here) are ended first.
  const finishActive = () => t.db('migrations').where({ project_id: p.id }).whereIn('status', ['queued', 'running']).update({ status: 'succeeded' });

  it('a second migration while one is active is a 409 naming it: the same post again, a dry run or another range', async () => {
    await finishActive();
    const body = { ...good(), START_DATE: '2024-01-01', END_DATE: '2024-01-03' };
    const a = await post(body);
    expect(a.status).toBe(202);
    for (const next of [body, { ...body, DRY_RUN: true }, { ...body, END_DATE: '2024-01-04' }]) {
      const refused = await post(next);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ status: 'error', active_migration_id: a.body.results.migration_id });
      expect(refused.body.error).toContain(a.body.results.migration_id);
    }
    expect((await post(body)).body.error).toMatch(/this same migration/);
    const active = await t.db('migrations').where({ project_id: p.id }).whereIn('status', ['queued', 'running']).count({ n: '*' }).first();
    expect(Number(active!.n)).toBe(1);
    await finishActive();
    const dry = await post({ ...body, DRY_RUN: true });
    expect(dry.status).toBe(202);
    expect(dry.body.results.migration_id).not.toBe(a.body.results.migration_id);
  });

  it('shows progress to the project token and the app API, and to nobody else', async () => {
    await finishActive();
    const created = await post({ ...good(), START_DATE: '2024-02-01', END_DATE: '2024-02-02' });
    const id = created.body.results.migration_id as string;
    const get = (path: string, auth?: string) => fetch(`${app.url}${path}`, { headers: auth ? { authorization: auth } : {} });

    const byToken = await get(`/migrate/migrations/${id}`, basicAuth(p.token));
    expect(byToken.status).toBe(200);
    const view = ((await byToken.json()) as any).results;
    expect(view).toMatchObject({ migration_id: id, status: 'queued', phase: 'count', days_total: 2, days_done: 0, events_loaded: 0, profiles_set: 0 });
    expect(view.days.map((d: any) => d.day)).toEqual(['2024-02-01', '2024-02-02']);
    expect(JSON.stringify(view)).not.toMatch(/credentials|very-secret-value|source_key_hash/);

    expect((await get(`/migrate/migrations/${id}`)).status).toBe(401);
    expect((await get(`/migrate/migrations/${id}`, basicAuth('wrong-token'))).status).toBe(401);
    const other = await seedProject(t.db);
    expect((await get(`/migrate/migrations/${id}`, basicAuth(other.token))).status).toBe(404);
    expect((await get(`/migrate/migrations/not-an-id`, basicAuth(p.token))).status).toBe(404);

    const list = await get(`/api/app/projects/${p.id}/migrations?limit=200`, p.basic);
    expect(list.status).toBe(200);
    expect(((await list.json()) as any).results.map((m: any) => m.migration_id)).toContain(id);
    expect((await get(`/api/app/projects/${p.id}/migrations/${id}`, p.basic)).status).toBe(200);
    expect((await get(`/api/app/projects/${other.id}/migrations/${id}`, other.basic)).status).toBe(404);
    expect((await get(`/api/app/projects/${p.id}/migrations`, other.basic)).status).toBe(403);
    expect((await get(`/api/app/projects/${p.id}/migrations?limit=0`, p.basic)).status).toBe(400);
  });

  it('answers usage per source for a month, and refuses a malformed month', async () => {
    const month = new Date().toISOString().slice(0, 7);
    const res = await fetch(`${app.url}/api/app/projects/${p.id}/usage?month=${month}`, { headers: { authorization: p.basic } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).results).toEqual({ project_id: p.id, month, events: 0, sources: {}, events_updated: 0, events_deleted: 0 });
    const bad = await fetch(`${app.url}/api/app/projects/${p.id}/usage?month=2024-13`, { headers: { authorization: p.basic } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error).toMatch(/'month' must be 'YYYY-MM'/);
  });
});
