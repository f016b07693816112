/**
 * /import remembers a client's write access for one second (src/http/recent-access.ts). What
 * must hold: a revoked grant, a deleted account or a wrong secret is refused within that second
 * and never after it; the memory is per credentials *and* project, so it never opens another
 * project; and nothing but a sha256 of the credentials is kept.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECENT_ACCESS_TTL_MS, RecentAccess } from '../../src/http/recent-access.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

const event = (i: number) => [{ event: 'e', properties: { time: 1_700_000_000 + i, distinct_id: 'u', $insert_id: `ra-${i}` } }];

async function post(app: TestApp, project: number, authorization: string, i: number): Promise<number> {
  const res = await fetch(`${app.url}/import?project_id=${project}&strict=1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify(event(i)),
  });
  await res.arrayBuffer();
  return res.status;
}

describe.each(dbKinds())('recent write access on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let a: SeededProject;
  let b: SeededProject;

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db);
    a = await seedProject(t.db);
    b = await seedProject(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  it('a removed grant stops writing within one second, and stays stopped', async () => {
    expect(await post(app, a.id, a.basic, 1)).toBe(200);
    const account = await t.db('service_accounts').where({ username: a.sa.username }).first();
    await t.db('service_account_roles').where({ service_account_id: account.id }).delete();
    await new Promise((r) => setTimeout(r, RECENT_ACCESS_TTL_MS + 50));
    expect(await post(app, a.id, a.basic, 2)).toBe(403);
    expect(await post(app, a.id, a.basic, 3)).toBe(403);
  });

  it('never opens another project, and a wrong secret is refused while the right one is remembered', async () => {
    expect(await post(app, b.id, b.basic, 4)).toBe(200);
    expect(await post(app, a.id, b.basic, 5)).toBe(403);
    expect(await post(app, b.id, basicAuth(b.sa.username, `${b.sa.secret}x`), 6)).toBe(401);
    expect(await post(app, b.id, b.basic, 7)).toBe(200);
  });
});

describe('RecentAccess', () => {
  it('forgets after the TTL and keys by a hash, not the credentials', () => {
    const r = new RecentAccess();
    const key = r.keyOf('Basic c2VjcmV0', '7');
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(key).not.toContain('c2VjcmV0');
    expect(r.keyOf('Basic c2VjcmV0', '8')).not.toBe(key);
    const access = { project: { id: 7 }, role: 'owner' } as never;
    r.set(key, access, 1000);
    expect(r.get(key, 1000 + RECENT_ACCESS_TTL_MS - 1)).toBe(access);
    expect(r.get(key, 1000 + RECENT_ACCESS_TTL_MS)).toBeUndefined();
  });
});
