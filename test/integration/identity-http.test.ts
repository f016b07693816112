/**
 * The simplified ID merge over HTTP, scenario by scenario (docs/identity.md): a link months after
 * the anonymous events moves them to the user in the unique count, the export and the
 * identities endpoint; two devices of one user are one unique user; a replayed batch doubles
 * nothing; the profile query answers a linked device's id with its user's profile; a second
 * user on a linked device does not steal it; original projects keep
 * distinct_id as sent; bad ids are per-record 400s, never a 500. Runs on every event store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { get, lines, qs } from '../helpers/read-back.js';
import { storeKinds, type TestStore } from '../helpers/store-kinds.js';

const DAY = 86_400_000;
const JAN = Date.UTC(2026, 0, 10, 12);
const JUN = Date.UTC(2026, 5, 10, 12);

describe.each(storeKinds())('identity over HTTP on $name', (kind) => {
  let t: TestStore;
  let app: TestApp;

  beforeAll(async () => {
    t = await kind.open();
    app = await startTestApp(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  const importEvents = async (p: SeededProject, records: unknown[]) => {
    const res = await fetch(`${app.url}/import?project_id=${p.id}&strict=1`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/json' },
      body: JSON.stringify(records),
    });
    return { status: res.status, body: await res.json() };
  };
  const ev = (event: string, time: number, props: Record<string, unknown>) => ({ event, properties: { time, ...props } });
  const segmentation = async (p: SeededProject, params: Record<string, string>) =>
    (await get(`${app.url}/api/2.0/segmentation${qs({ project_id: p.id, ...params })}`, p.basic)).json();
  const exported = async (p: SeededProject, from: string, to: string) =>
    lines((await get(`${app.url}/api/2.0/export${qs({ project_id: p.id, from_date: from, to_date: to })}`, p.basic)).text);
  const identity = async (p: SeededProject, distinctId: string) =>
    (await get(`${app.url}/api/app/projects/${p.id}/identities${qs({ distinct_id: distinctId })}`, p.basic)).json();

  it('a link months after the anonymous events moves them to the user; two devices are one user', async () => {
    const p = await seedProject(t.db);
    const anon = [
      ev('view', JAN, { $device_id: 'laptop', $insert_id: 'a1' }),
      ev('view', JAN + 1000, { $device_id: 'phone', $insert_id: 'a2' }),
      ev('view', JAN + 2000, { $device_id: 'laptop', $insert_id: 'a3' }),
    ];
    expect(await importEvents(p, anon)).toMatchObject({ status: 200, body: { num_records_imported: 3 } });
    const jan = { event: 'view', from_date: '2026-01-10', to_date: '2026-01-10', unit: 'day' };
    expect((await segmentation(p, { ...jan, type: 'unique' })).data.values).toEqual({ view: { '2026-01-10': 2 } });
    expect(await identity(p, '$device:laptop')).toEqual({ status: 'ok', results: { user_id: null, device_ids: ['laptop'] } });

    // Months later, both devices sign in as ada.
    const links = [
      ev('$identify', JUN, { $device_id: 'laptop', $user_id: 'ada', $anon_distinct_id: '$device:laptop', $insert_id: 'l1' }),
      ev('login', JUN + DAY, { $device_id: 'phone', $user_id: 'ada', $insert_id: 'l2' }),
    ];
    expect(await importEvents(p, links)).toMatchObject({ status: 200, body: { num_records_imported: 2 } });
    expect((await segmentation(p, { ...jan, type: 'unique' })).data.values).toEqual({ view: { '2026-01-10': 1 } });
    expect((await segmentation(p, { ...jan, type: 'general' })).data.values).toEqual({ view: { '2026-01-10': 3 } });
    expect((await segmentation(p, { ...jan, type: 'average' })).data.values).toEqual({ view: { '2026-01-10': 3 } });
    const janEvents = await exported(p, '2026-01-10', '2026-01-10');
    expect(janEvents.map((e) => [e.properties.$insert_id, e.properties.distinct_id, e.properties.$device_id]).sort()).toEqual([
      ['a1', 'ada', 'laptop'],
      ['a2', 'ada', 'phone'],
      ['a3', 'ada', 'laptop'],
    ]);
    for (const id of ['ada', '$device:laptop', '$device:phone']) {
      expect(await identity(p, id)).toEqual({ status: 'ok', results: { user_id: 'ada', device_ids: ['laptop', 'phone'] } });
    }
    // In where/on, `distinct_id` is the id as stored, pushed down or not (docs/identity.md).
    const stored = lines(
      (await get(`${app.url}/api/2.0/export${qs({ project_id: p.id, from_date: '2026-01-10', to_date: '2026-01-10', where: 'properties["distinct_id"] == "$device:laptop"' })}`, p.basic)).text,
    );
    expect(stored.map((e) => [e.properties.$insert_id, e.properties.distinct_id]).sort()).toEqual([
      ['a1', 'ada'],
      ['a3', 'ada'],
    ]);
    const where = (w: string) => segmentation(p, { ...jan, type: 'unique', where: w });
    expect((await where('properties["distinct_id"] == "$device:laptop"')).data.values).toEqual({ view: { '2026-01-10': 1 } });
    expect((await where('properties["distinct_id"] + "" == "$device:laptop"')).data.values).toEqual({ view: { '2026-01-10': 1 } });
    // Segmenting by a property works on resolved users too.
    const byDevice = await segmentation(p, { ...jan, type: 'unique', on: '$device_id' });
    expect(byDevice.data.values).toEqual({ laptop: { '2026-01-10': 1 }, phone: { '2026-01-10': 1 } });
  });

  it("the profile query answers a linked device's distinct_id with its user's profile", async () => {
    const engage = async (p: SeededProject, params: Record<string, string>) =>
      ((await get(`${app.url}/api/2.0/engage${qs({ project_id: p.id, ...params })}`, p.basic)).json()) as { total: number; results: { $distinct_id: string; $properties: Record<string, unknown> }[] };
    const setProfiles = async (p: SeededProject, updates: Record<string, unknown>[]) => {
      const res = await fetch(`${app.url}/engage?verbose=1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(updates.map((u) => ({ $token: p.token, ...u }))),
      });
      expect(await res.json()).toEqual({ status: 1, error: null });
    };
    for (const idMerge of ['simplified', 'original'] as const) {
      const p = await seedProject(t.db, { idMerge });
      await importEvents(p, [
        ev('view', JAN, { $device_id: 'laptop', $insert_id: 'v1' }),
        ev('view', JAN + 1, { $device_id: 'tablet', $insert_id: 'v2' }),
        ev('view', JAN + 2, { $device_id: 'kiosk', $insert_id: 'v3' }),
        ev('login', JUN, { $device_id: 'laptop', $user_id: 'ada', $insert_id: 'l1' }),
        ev('login', JUN + 1, { $device_id: 'tablet', $user_id: 'bo', $insert_id: 'l2' }),
      ]);
      await setProfiles(p, [
        { $distinct_id: 'ada', $set: { plan: 'pro' } },
        { $distinct_id: '$device:laptop', $set: { anon: true } },
        { $distinct_id: '$device:tablet', $set: { anon: true } },
        { $distinct_id: '$device:kiosk', $set: { anon: true } },
      ]);
      const ids = (r: Awaited<ReturnType<typeof engage>>) => r.results.map((x) => x.$distinct_id);
      const laptop = await engage(p, { distinct_id: '$device:laptop' });
      const both = await engage(p, { distinct_ids: JSON.stringify(['$device:laptop', 'ada', '$device:kiosk', '$device:tablet', '$device:none']) });
      if (idMerge === 'simplified') {
        // laptop is ada's: her profile, once, however many of her ids are asked.
        expect(laptop).toMatchObject({ total: 1, results: [{ $distinct_id: 'ada', $properties: { plan: 'pro' } }] });
        // tablet is bo's, who has no profile: the device's own; kiosk is nobody's: its own.
        expect(ids(both)).toEqual(['$device:kiosk', '$device:tablet', 'ada']);
        expect(both.total).toBe(3);
      } else {
        expect(laptop).toMatchObject({ total: 1, results: [{ $distinct_id: '$device:laptop', $properties: { anon: true } }] });
        expect(ids(both)).toEqual(['$device:kiosk', '$device:laptop', '$device:tablet', 'ada']);
      }
      // A where filter applies to the profile answered.
      expect(ids(await engage(p, { distinct_id: '$device:laptop', where: 'properties["plan"] == "pro"' }))).toEqual(idMerge === 'simplified' ? ['ada'] : []);
    }
  });

  it('a replayed batch doubles nothing, also through another writer', async () => {
    const p = await seedProject(t.db);
    const now = Date.now() - 60_000;
    const batch = [
      ev('view', now, { $device_id: 'd1' }),
      ev('buy', now + 1, { $device_id: 'd1', $user_id: 'bo' }),
      ev('view', now + 2, { $device_id: 'd2', $insert_id: 'x-2' }),
    ];
    for (let i = 0; i < 3; i++) expect((await importEvents(p, batch)).status).toBe(200);
    const track = await fetch(`${app.url}/track`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(batch.map((e) => ({ ...e, properties: { ...e.properties, token: p.token } }))),
    });
    expect(await track.text()).toBe('1');
    const day = new Date(now).toISOString().slice(0, 10);
    const all = await exported(p, day, day);
    expect(all).toHaveLength(3);
    const general = await segmentation(p, { from_date: day, to_date: day, type: 'general' });
    expect(general.data.values).toEqual({ view: { [day]: 2 }, buy: { [day]: 1 } });
    const unique = await segmentation(p, { from_date: day, to_date: day, type: 'unique' });
    expect(unique.data.values).toEqual({ view: { [day]: 2 }, buy: { [day]: 1 } });
  });

  it('a second user on a linked device does not steal it', async () => {
    const p = await seedProject(t.db);
    await importEvents(p, [ev('view', JAN, { $device_id: 'shared', $insert_id: 's0' })]);
    await importEvents(p, [ev('login', JAN + 1, { $device_id: 'shared', $user_id: 'first', $insert_id: 's1' })]);
    await importEvents(p, [ev('login', JAN + 2, { $device_id: 'shared', $user_id: 'second', $insert_id: 's2' })]);
    expect(await identity(p, '$device:shared')).toEqual({ status: 'ok', results: { user_id: 'first', device_ids: ['shared'] } });
    expect(await identity(p, 'second')).toEqual({ status: 'ok', results: { user_id: 'second', device_ids: [] } });
    const events = await exported(p, '2026-01-10', '2026-01-10');
    expect(Object.fromEntries(events.map((e) => [e.properties.$insert_id, e.properties.distinct_id]))).toEqual({ s0: 'first', s1: 'first', s2: 'second' });
    const unique = await segmentation(p, { from_date: '2026-01-10', to_date: '2026-01-10', type: 'unique' });
    expect(unique.data.values).toEqual({ view: { '2026-01-10': 1 }, login: { '2026-01-10': 2 } });
  });

  it('$identify, $merge and $create_alias events are accepted and stored like any event', async () => {
    const p = await seedProject(t.db);
    const r = await importEvents(p, [
      ev('$identify', JAN, { distinct_id: 'zoe', $anon_distinct_id: '$device:z1', $insert_id: 'm1' }),
      ev('$merge', JAN + 1, { distinct_id: 'zoe', $distinct_ids: ['zoe', '$device:z2'], $insert_id: 'm2' }),
      ev('$create_alias', JAN + 2, { distinct_id: '$device:z3', alias: 'zoe', $insert_id: 'm3' }),
    ]);
    expect(r).toMatchObject({ status: 200, body: { num_records_imported: 3 } });
    const events = await exported(p, '2026-01-10', '2026-01-10');
    expect(events.map((e) => [e.event, e.properties.distinct_id]).sort()).toEqual([
      ['$create_alias', '$device:z3'],
      ['$identify', 'zoe'],
      ['$merge', 'zoe'],
    ]);
    // They carry no $device_id/$user_id pair, so they link nothing (simplified ID merge).
    expect(await identity(p, 'zoe')).toEqual({ status: 'ok', results: { user_id: 'zoe', device_ids: [] } });
  });

  it('original projects keep distinct_id as sent and link nothing', async () => {
    const p = await seedProject(t.db, { idMerge: 'original' });
    const r = await importEvents(p, [
      ev('view', JAN, { distinct_id: 'anon-1', $device_id: 'd9', $insert_id: 'o1' }),
      ev('login', JAN + 1, { distinct_id: 'crm-7', $device_id: 'd9', $user_id: 'zed', $insert_id: 'o2' }),
    ]);
    expect(r.status).toBe(200);
    const events = await exported(p, '2026-01-10', '2026-01-10');
    expect(Object.fromEntries(events.map((e) => [e.properties.$insert_id, e.properties.distinct_id]))).toEqual({ o1: 'anon-1', o2: 'crm-7' });
    expect(await identity(p, '$device:d9')).toEqual({ status: 'ok', results: { user_id: null, device_ids: ['d9'] } });
  });

  it('bad ids are per-record rejections; the identities endpoint validates its input', async () => {
    const p = await seedProject(t.db);
    const r = await importEvents(p, [
      ev('x', JAN, { $user_id: '$device:abc', $insert_id: 'b1' }),
      ev('x', JAN, { $device_id: 'd'.repeat(256), $insert_id: 'b2' }),
      ev('x', JAN, { $user_id: 'ü'.repeat(128), $insert_id: 'b3' }),
      ev('x', JAN, { $user_id: { id: 1 }, $insert_id: 'b4' }),
      ev('x', JAN, { $user_id: 'ok', $device_id: 'd'.repeat(255), $insert_id: 'b5' }),
    ]);
    expect(r.status).toBe(400);
    expect(r.body.num_records_imported).toBe(1);
    expect(r.body.failed_records.map((f: { index: number; field: string }) => [f.index, f.field])).toEqual([
      [0, 'properties.$user_id'],
      [1, 'properties.$device_id'],
      [2, 'properties.$user_id'],
      [3, 'properties.$user_id'],
    ]);
    expect((await identity(p, `$device:${'d'.repeat(255)}`)).results).toEqual({ user_id: 'ok', device_ids: ['d'.repeat(255)] });
    const missing = await get(`${app.url}/api/app/projects/${p.id}/identities`, p.basic);
    expect(missing.status).toBe(400);
    expect(missing.json()).toMatchObject({ status: 'error', error: "'distinct_id' is required" });
    const long = await get(`${app.url}/api/app/projects/${p.id}/identities${qs({ distinct_id: 'x'.repeat(300) })}`, p.basic);
    expect(long.status).toBe(400);
    expect((await get(`${app.url}/api/app/projects/${p.id}/identities${qs({ distinct_id: 'a' })}`)).status).toBe(401);
    const other = await seedProject(t.db);
    expect((await get(`${app.url}/api/app/projects/${p.id}/identities${qs({ distinct_id: 'a' })}`, other.basic)).status).toBe(403);
  });

  it('the longest device ids: anonymous events are stored with the rest of their batch and resolve once linked', async () => {
    const p = await seedProject(t.db);
    // `$device:` + 255 characters: past a varchar(255) column, which failed the whole batch with a 500.
    const ascii = 'd'.repeat(255);
    const wide = 'ü'.repeat(127); // 254 bytes
    const r = await importEvents(p, [
      ev('view', JAN, { $device_id: ascii, $insert_id: 'w1' }),
      ev('view', JAN + 1, { $device_id: wide, $insert_id: 'w2' }),
      ev('view', JAN + 2, { distinct_id: 'plain', $insert_id: 'w3' }),
    ]);
    expect(r).toMatchObject({ status: 200, body: { num_records_imported: 3 } });
    const ids = async () => (await exported(p, '2026-01-10', '2026-01-10')).map((e) => [e.properties.$insert_id, e.properties.distinct_id]).sort();
    expect(await ids()).toEqual([
      ['w1', `$device:${ascii}`],
      ['w2', `$device:${wide}`],
      ['w3', 'plain'],
    ]);
    expect(await importEvents(p, [ev('$identify', JUN, { $device_id: ascii, $user_id: 'long', $insert_id: 'w4' })])).toMatchObject({ status: 200 });
    expect((await ids()).find(([id]) => id === 'w1')).toEqual(['w1', 'long']);
  });

  it('segmentation: unique/average/general and their 400s in the Query API shape', async () => {
    const p = await seedProject(t.db);
    const cases: [Record<string, string>, RegExp][] = [
      [{ type: 'cohort' }, /'type' must be general, unique or average/],
      [{ unit: 'year' }, /'unit' must be one of/],
      [{ where: 'properties["a"] ==' }, /invalid 'where' expression/],
      [{ from_date: '2026-02-01' }, /after/],
      [{ from_date: '2010-01-01' }, /at most 1830/],
      [{ limit: '0' }, /'limit' must be between 1 and 10000/],
      [{ limit: '10001' }, /'limit' must be between 1 and 10000/],
    ];
    for (const [params, message] of cases) {
      const res = await get(`${app.url}/api/2.0/segmentation${qs({ project_id: p.id, from_date: '2026-01-01', to_date: '2026-01-31', ...params })}`, p.basic);
      expect(res.status, JSON.stringify(params)).toBe(400);
      expect(res.json()).toMatchObject({ error: expect.stringMatching(message), request: expect.stringContaining('/api/2.0/segmentation') });
    }
    const unauth = await get(`${app.url}/api/2.0/segmentation${qs({ project_id: p.id, from_date: '2026-01-01', to_date: '2026-01-31' })}`);
    expect(unauth.status).toBe(401);
    expect(unauth.json()).toMatchObject({ error: expect.any(String), request: expect.any(String) });
    // The app API's insights takes the same parameters.
    await importEvents(p, [ev('v', JAN, { $device_id: 'q', $insert_id: 'i1' }), ev('v', JAN + 1, { $device_id: 'q', $insert_id: 'i2' })]);
    const insights = (await get(`${app.url}/api/app/projects/${p.id}/insights${qs({ from_date: '2026-01-10', to_date: '2026-01-10', type: 'average' })}`, p.basic)).json();
    expect(insights.results.values).toEqual({ v: { '2026-01-10': 2 } });
  });
});
