/**
 * A method a path does not take is a 405 naming the methods it does take, in that path's own
 * error shape (ingestion `{code,error,status}`, the legacy SDK form's `0`, the app API's), not a 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { seedProject } from '../helpers/accounts.js';

describe('methods an ingestion path does not take', () => {
  let t: TestDb;
  let app: TestApp;

  beforeAll(async () => {
    t = await createTestDb('sqlite');
    app = await startTestApp(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  it('PUT /import and DELETE /flags: 405 in the ingestion shape, with Allow', async () => {
    const put = await fetch(`${app.url}/import?project_id=1`, { method: 'PUT', body: '[]' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    expect(await put.json()).toEqual({ code: 405, error: 'method PUT is not allowed on /import: use GET, POST', status: 'Method Not Allowed' });
    const del = await fetch(`${app.url}/flags`, { method: 'DELETE' });
    expect([del.status, del.headers.get('allow'), ((await del.json()) as { code: number }).code]).toEqual([405, 'GET', 405]);
  });

  it('PATCH /track and PUT /engage: 405 in the legacy form (0, or {status:0,error} with verbose=1)', async () => {
    const patch = await fetch(`${app.url}/track`, { method: 'PATCH' });
    expect([patch.status, await patch.text()]).toEqual([405, '0']);
    const put = await fetch(`${app.url}/engage?verbose=1`, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(await put.json()).toEqual({ status: 0, error: 'method PUT is not allowed on /engage: use GET, POST' });
  });

  it('any routed path answers another method with 405 and Allow, in its own surface\'s shape', async () => {
    const p = await seedProject(t.db, { role: 'owner' });
    const auth = { authorization: p.basic };
    const list = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports`, { method: 'PUT', headers: auth });
    expect(list.status).toBe(405);
    expect(list.headers.get('allow')).toBe('GET, POST');
    expect(await list.json()).toEqual({ status: 'error', type: 'method_not_allowed', error: `method PUT is not allowed on /api/app/projects/${p.id}/batch-imports: use GET, POST` });
    const one = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports/00000000-0000-0000-0000-000000000000`, { method: 'DELETE', headers: auth });
    expect([one.status, one.headers.get('allow')]).toEqual([405, 'GET']);
    const migrate = await fetch(`${app.url}/migrate/amplitude`);
    expect([migrate.status, migrate.headers.get('allow')]).toEqual([405, 'POST']);
    // Authentication still comes first, and a path no method takes is still a 404.
    expect((await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports`, { method: 'PUT' })).status).toBe(401);
    expect((await fetch(`${app.url}/api/app/projects/${p.id}/nothing-here`, { headers: auth })).status).toBe(404);
  });

  it('the preflight of a client SDK path still answers 204, and an unknown path is still a 404', async () => {
    const preflight = await fetch(`${app.url}/track`, { method: 'OPTIONS', headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(204);
    expect((await fetch(`${app.url}/nowhere`, { method: 'PUT' })).status).toBe(404);
  });
});
