/** /engage and /groups over HTTP: the official mixpanel SDK, every operator, auth and error bodies. */
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findProfile } from '../../src/db/profiles.repo.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

const require = createRequire(import.meta.url);
const Mixpanel = require('mixpanel') as {
  init: (token: string, config: Record<string, unknown>) => MixpanelClient;
};
type Cb = (err?: Error) => void;
interface MixpanelClient {
  people: {
    set: (id: string, props: Record<string, unknown>, modifiers?: Record<string, unknown> | Cb, cb?: Cb) => void;
    set_once: (id: string, props: Record<string, unknown>, cb: Cb) => void;
    increment: (id: string, props: Record<string, number>, cb: Cb) => void;
    append: (id: string, props: Record<string, unknown>, cb: Cb) => void;
    union: (id: string, props: Record<string, unknown>, cb: Cb) => void;
    remove: (id: string, props: Record<string, unknown>, cb: Cb) => void;
    unset: (id: string, props: string[], cb: Cb) => void;
    delete_user: (id: string, cb: Cb) => void;
  };
  groups: {
    set: (key: string, id: string, props: Record<string, unknown>, cb: Cb) => void;
    set_once: (key: string, id: string, props: Record<string, unknown>, cb: Cb) => void;
    union: (key: string, id: string, props: Record<string, unknown>, cb: Cb) => void;
    remove: (key: string, id: string, props: Record<string, unknown>, cb: Cb) => void;
    unset: (key: string, id: string, props: string[], cb: Cb) => void;
    delete_group: (key: string, id: string, cb: Cb) => void;
  };
}

/** Calls an SDK method with a trailing callback and resolves (or rejects) with its outcome. */
function sdk(call: (cb: Cb) => void): Promise<void> {
  return new Promise((resolve, reject) => call((err) => (err ? reject(err) : resolve())));
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
const user = (distinctId: string) => ({ kind: 'user' as const, distinctId });

describe.each(dbKinds())('/engage and /groups over HTTP on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;
  let mp: MixpanelClient;
  let verboseMp: MixpanelClient;

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { ENGAGE_MAX_UPDATES: 5, IMPORT_MAX_BYTES: 64 * 1024 });
    p = await seedProject(t.db);
    const host = new URL(app.url).host;
    mp = Mixpanel.init(p.token, { host, protocol: 'http', keepAlive: false });
    verboseMp = Mixpanel.init(p.token, { host, protocol: 'http', keepAlive: false, verbose: true });
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${app.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : Buffer.isBuffer(body) ? new Uint8Array(body) : JSON.stringify(body),
    });

  it('the official SDK: people.set, set_once, increment, append, union, remove, unset, delete_user', async () => {
    const before = Date.now();
    await sdk((cb) => mp.people.set('sdk-user', { $email: 'ada@example.com', plan: 'pro', seats: 3, ip: '10.0.0.1' }, cb));
    await sdk((cb) => mp.people.set_once('sdk-user', { first_source: 'ads', plan: 'ignored' }, cb));
    await sdk((cb) => mp.people.increment('sdk-user', { logins: 1, credits: 2.5 }, cb));
    await sdk((cb) => mp.people.increment('sdk-user', { logins: 1 }, cb));
    await sdk((cb) => mp.people.append('sdk-user', { pages: '/home' }, cb));
    await sdk((cb) => mp.people.union('sdk-user', { browsers: ['firefox', 'chrome'] }, cb));
    await sdk((cb) => verboseMp.people.union('sdk-user', { browsers: 'firefox' }, cb));
    await sdk((cb) => mp.people.remove('sdk-user', { browsers: 'chrome' }, cb));
    await sdk((cb) => mp.people.unset('sdk-user', ['seats'], cb));
    const stored = await findProfile(t.db, p.id, user('sdk-user'));
    const { $last_seen: lastSeen, ...props } = stored!.properties;
    expect(props).toEqual({
      $email: 'ada@example.com',
      plan: 'pro',
      first_source: 'ads',
      logins: 2,
      credits: 2.5,
      pages: ['/home'],
      browsers: ['firefox'],
    });
    // The SDK moves `ip` out of $set into $ip, which is not a property.
    expect(typeof lastSeen).toBe('string');
    expect(Date.parse(`${lastSeen as string}Z`)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);

    await sdk((cb) => mp.people.delete_user('sdk-user', cb));
    expect(await findProfile(t.db, p.id, user('sdk-user'))).toBeUndefined();
  });

  it('the official SDK writes are read back field for field through /api/2.0/engage', async () => {
    await sdk((cb) => mp.people.set('readback', { $name: 'Grace', plan: 'team', langs: ['cobol'] }, { $time: new Date('2024-03-01T10:00:00Z') }, cb));
    await sdk((cb) => mp.people.increment('readback', { logins: 3 }, cb));
    await sdk((cb) => mp.groups.set('company', 'Navy', { size: 100 }, cb));
    const res = await fetch(`${app.url}/api/2.0/engage?project_id=${p.id}&distinct_id=readback`, { headers: { authorization: p.basic } });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.results).toHaveLength(1);
    const { $last_seen: lastSeen, ...props } = body.results[0].$properties;
    expect(body.results[0].$distinct_id).toBe('readback');
    expect(props).toEqual({ $name: 'Grace', plan: 'team', langs: ['cobol'], logins: 3 });
    expect(lastSeen).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
    const groups = await fetch(`${app.url}/api/2.0/engage?project_id=${p.id}&data_group_id=company`, { headers: { authorization: p.basic } });
    const navy = (await groups.json()).results.find((r: { $properties: Record<string, unknown> }) => r.$properties.size === 100);
    expect(navy?.$properties).toEqual({ size: 100 });
  });

  it('the official SDK: people.set with a $time modifier is latest-wins; $ignore_time leaves $last_seen', async () => {
    const newer = new Date('2024-05-02T00:00:00Z');
    const older = new Date('2024-05-01T00:00:00Z');
    await sdk((cb) => mp.people.set('timed', { plan: 'new' }, { $time: newer }, cb));
    await sdk((cb) => mp.people.set('timed', { plan: 'old', extra: 1 }, { $time: older }, cb));
    await sdk((cb) => mp.people.set('timed', { quiet: true }, { $ignore_time: true, $time: new Date('2024-06-01T00:00:00Z') }, cb));
    expect((await findProfile(t.db, p.id, user('timed')))?.properties).toEqual({
      plan: 'new',
      extra: 1,
      quiet: true,
      $last_seen: '2024-05-02T00:00:00',
    });
  });

  it('the official SDK: groups.set, set_once, union, remove, unset, delete_group', async () => {
    await sdk((cb) => mp.groups.set('company', 'Acme Inc.', { $name: 'Acme Inc.', industry: 'widgets', size: 10 }, cb));
    await sdk((cb) => mp.groups.set_once('company', 'Acme Inc.', { founded: 1999, industry: 'ignored' }, cb));
    await sdk((cb) => mp.groups.union('company', 'Acme Inc.', { products: ['anvil', 'rocket'] }, cb));
    await sdk((cb) => mp.groups.remove('company', 'Acme Inc.', { products: 'rocket' }, cb));
    await sdk((cb) => mp.groups.unset('company', 'Acme Inc.', ['size'], cb));
    expect((await findProfile(t.db, p.id, { kind: 'group', groupKey: 'company', groupId: 'Acme Inc.' }))?.properties).toEqual({
      $name: 'Acme Inc.',
      industry: 'widgets',
      founded: 1999,
      products: ['anvil'],
    });
    await sdk((cb) => mp.groups.set('company', 'Gone', { a: 1 }, cb));
    await sdk((cb) => mp.groups.delete_group('company', 'Gone', cb));
    expect(await findProfile(t.db, p.id, { kind: 'group', groupKey: 'company', groupId: 'Gone' })).toBeUndefined();
  });

  it('JSON, NDJSON, gzip and form bodies; every operator in one batch; verbose answers', async () => {
    const batch = [
      { $token: p.token, $distinct_id: 'batch', $set: { a: 1 } },
      { $token: p.token, $distinct_id: 'batch', $add: { n: 2 }, $append: { l: 'x' } },
      { $token: p.token, $distinct_id: 'batch', $union: { u: [1, 2] }, $remove: { l: 'x' } },
      { $token: p.token, $distinct_id: 'batch', $set_once: { a: 9, b: 2 }, $unset: ['missing'] },
    ];
    const json = await post('/engage?verbose=1', batch);
    expect(json.status).toBe(200);
    expect(await json.json()).toEqual({ status: 1, error: null });
    const nd = await post('/engage', batch.map((u) => JSON.stringify(u)).join('\n'), { 'content-type': 'application/x-ndjson' });
    expect(await nd.text()).toBe('1');
    const gz = await post('/engage', zlib.gzipSync(JSON.stringify(batch)), { 'content-encoding': 'gzip' });
    expect(await gz.text()).toBe('1');
    const form = await post('/engage', `data=${encodeURIComponent(b64(batch))}&verbose=1`, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(await form.json()).toEqual({ status: 1, error: null });
    expect((await findProfile(t.db, p.id, user('batch')))?.properties).toMatchObject({ a: 1, b: 2, n: 8, l: [], u: [1, 2] });
  });

  it('a request with any invalid update applies none of them: 400, 0 / verbose error with failed_records', async () => {
    const batch = [
      { $token: p.token, $distinct_id: 'atomic', $add: { n: 1 } },
      { $token: p.token, $distinct_id: 'atomic', $add: { n: 'one' } },
      { $token: p.token, $distinct_id: 'atomic', $frobnicate: {} },
    ];
    const plain = await post('/engage', batch);
    expect(plain.status).toBe(400);
    expect(await plain.text()).toBe('0');
    const verbose = await post('/engage?verbose=1', batch);
    expect(verbose.status).toBe(400);
    const body = await verbose.json();
    expect(body.status).toBe(0);
    expect(body.error).toMatch(/2 of 3 update\(s\) failed validation, none were applied: update 1: '\$add' value of 'n' must be a number/);
    expect(body.failed_records).toEqual([
      { index: 1, message: expect.stringMatching(/must be a number/) },
      { index: 2, message: expect.stringMatching(/no operation/) },
    ]);
    expect(await findProfile(t.db, p.id, user('atomic'))).toBeUndefined();
    // State-dependent failures roll back too.
    await post('/engage', [{ $token: p.token, $distinct_id: 'atomic2', $set: { s: 'text' } }]);
    const conflict = await post('/engage?verbose=1', [
      { $token: p.token, $distinct_id: 'atomic2', $set: { other: 1 } },
      { $token: p.token, $distinct_id: 'atomic2', $add: { s: 1 } },
    ]);
    expect(conflict.status).toBe(400);
    expect((await conflict.json()).error).toMatch(/cannot \$add to 's'/);
    expect((await findProfile(t.db, p.id, user('atomic2')))?.properties).not.toHaveProperty('other');
  });

  it('the SDK surfaces a rejection as an error (verbose and plain)', async () => {
    await post('/engage', [{ $token: p.token, $distinct_id: 'str', $set: { s: 'x' } }]);
    await expect(sdk((cb) => mp.people.increment('str', { s: 1 }, cb))).rejects.toThrow('Mixpanel Server Error: 0');
    await expect(sdk((cb) => verboseMp.people.increment('str', { s: 1 }, cb))).rejects.toThrow(/cannot \$add to 's'/);
  });

  it('/groups refuses $add and $append clearly', async () => {
    const res = await post('/groups?verbose=1', [{ $token: p.token, $group_key: 'company', $group_id: 'X', $add: { n: 1 } }]);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatch(/'\$add' is not supported on group profiles/);
  });

  it('authentication: token, project secret, service accounts; 401 / 403 / 400 bodies', async () => {
    const other = await seedProject(t.db);
    const noToken = await post('/engage?verbose=1', [{ $distinct_id: 'a', $set: { a: 1 } }]);
    expect(noToken.status).toBe(401);
    expect(await noToken.json()).toEqual({ status: 0, error: expect.stringMatching(/missing project token/) });
    const badToken = await post('/engage', [{ $token: 'nope', $distinct_id: 'a', $set: { a: 1 } }]);
    expect([badToken.status, await badToken.text()]).toEqual([401, '0']);
    const mixed = await post('/engage?verbose=1', [
      { $token: p.token, $distinct_id: 'a', $set: { a: 1 } },
      { $token: other.token, $distinct_id: 'a', $set: { a: 1 } },
    ]);
    expect(mixed.status).toBe(400);
    expect((await mixed.json()).error).toMatch(/same '\$token'/);
    // Without credentials an update with no token is not applied in the project another names.
    const tokenless = await post('/engage?verbose=1', [
      { $token: other.token, $distinct_id: 'tokenless-a', $set: { a: 1 } },
      { $distinct_id: 'tokenless-b', $set: { a: 1 } },
    ]);
    expect(tokenless.status).toBe(400);
    expect((await tokenless.json()).error).toMatch(/update 1 carries no '\$token'/);
    expect(await findProfile(t.db, other.id, user('tokenless-a'))).toBeUndefined();
    expect(await findProfile(t.db, other.id, user('tokenless-b'))).toBeUndefined();

    // Project secret as Basic username: no token needed in the updates.
    const secret = await post('/engage', [{ $distinct_id: 'by-secret', $set: { ok: 1 } }], { authorization: basicAuth(p.api_secret) });
    expect([secret.status, await secret.text()]).toEqual([200, '1']);
    expect((await findProfile(t.db, p.id, user('by-secret')))?.properties.ok).toBe(1);
    // Service account with project_id.
    const sa = await post(`/engage?project_id=${p.id}`, [{ $distinct_id: 'by-sa', $set: { ok: 1 } }], { authorization: p.basic });
    expect([sa.status, await sa.text()]).toEqual([200, '1']);
    // Credentials of one project, token of another: 403.
    const crossed = await post('/engage', [{ $token: other.token, $distinct_id: 'x', $set: { a: 1 } }], { authorization: basicAuth(p.api_secret) });
    expect(crossed.status).toBe(403);
    // Service account of another project: 403; a consumer may not write: 403; wrong secret: 401.
    const foreign = await post(`/engage?project_id=${other.id}`, [{ $distinct_id: 'x', $set: { a: 1 } }], { authorization: p.basic });
    expect(foreign.status).toBe(403);
    const consumer = await seedProject(t.db, { role: 'consumer' });
    const ro = await post(`/engage?project_id=${consumer.id}`, [{ $distinct_id: 'x', $set: { a: 1 } }], { authorization: consumer.basic });
    expect(ro.status).toBe(403);
    const wrong = await post(`/engage?project_id=${p.id}`, [{ $distinct_id: 'x', $set: { a: 1 } }], { authorization: basicAuth(p.sa.username, 'wrong') });
    expect(wrong.status).toBe(401);
    expect(await findProfile(t.db, other.id, user('x'))).toBeUndefined();
  });

  it('residency: a project of another region gets 400 naming it', async () => {
    const eu = await seedProject(t.db, { residency: 'EU' });
    const res = await post('/engage?verbose=1', [{ $token: eu.token, $distinct_id: 'a', $set: { a: 1 } }]);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatch(/EU/);
  });

  it('limits and malformed input: 400 too many updates, 413, 415, bad JSON, bad gzip, missing data', async () => {
    const six = Array.from({ length: 6 }, (_, i) => ({ $token: p.token, $distinct_id: `l${i}`, $set: { a: 1 } }));
    const tooMany = await post('/engage?verbose=1', six);
    expect(tooMany.status).toBe(400);
    expect((await tooMany.json()).error).toMatch(/too many records.*limit is 5/);
    const big = await post('/engage', [{ $token: p.token, $distinct_id: 'big', $set: { blob: 'x'.repeat(70 * 1024) } }]);
    expect([big.status, await big.text()]).toEqual([413, '0']);
    const bomb = await post('/engage', zlib.gzipSync(Buffer.alloc(1024 * 1024, 0x20)), { 'content-encoding': 'gzip' });
    expect(bomb.status).toBe(413);
    const xml = await post('/engage?verbose=1', '<x/>', { 'content-type': 'application/xml' });
    expect(xml.status).toBe(415);
    expect((await xml.json()).status).toBe(0);
    const bad = await post('/engage', '[{"$token":');
    expect([bad.status, await bad.text()]).toEqual([400, '0']);
    const badGzip = await post('/engage', Buffer.from('not gzip'), { 'content-encoding': 'gzip' });
    expect(badGzip.status).toBe(400);
    const nul = await post('/engage?verbose=1', [{ $token: p.token, $distinct_id: 'nul', $set: { a: 'x\u0000y' } }]);
    expect(nul.status).toBe(400);
    expect((await nul.json()).error).toMatch(/NUL/);
    const surrogate = await post('/groups', `[{"$token":"${p.token}","$group_key":"k","$group_id":"\\ud800","$set":{"a":1}}]`);
    expect([surrogate.status, await surrogate.text()]).toEqual([400, '0']);
    const noData = await fetch(`${app.url}/engage?verbose=1`);
    expect(noData.status).toBe(400);
    expect((await noData.json()).error).toMatch(/missing 'data'/);
    const get = await fetch(`${app.url}/groups?data=${encodeURIComponent(b64({ $token: p.token, $group_key: 'k', $group_id: 'g', $set: { v: 1 } }))}`);
    expect([get.status, await get.text()]).toEqual([200, '1']);
    expect(await findProfile(t.db, p.id, user('big'))).toBeUndefined();
  });
});
