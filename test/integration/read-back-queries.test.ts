import { eventStoreOf } from '../helpers/events.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestEvents } from '../../src/ingest/events.ingest.js';
import { applyGroupUpdates, applyProfileUpdates } from '../../src/ingest/profiles.ingest.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import type { TestDb } from '../helpers/db.js';
import { createStoreTestDb, storeKindNames } from '../helpers/store-kinds.js';
import { get, postForm, qs } from '../helpers/read-back.js';

const DAY = 86_400_000;
const T = (iso: string) => Date.parse(iso);
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe.each(storeKindNames())('read-back queries on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let a: SeededProject;
  let b: SeededProject;
  const now = Date.now();

  beforeAll(async () => {
    t = await createStoreTestDb(kind);
    app = await startTestApp(t.db);
    a = await seedProject(t.db, { role: 'analyst' });
    b = await seedProject(t.db);

    // Recent events, and a warehouse import of 31-day-old history.
    const recent = [
      { event: 'signup', properties: { time: now - DAY, distinct_id: 'u1', $source: 'web' } },
      { event: 'signup', properties: { time: now - DAY - 1000, distinct_id: 'u2', $source: 'web' } },
      { event: 'signup', properties: { time: now - 2 * DAY, distinct_id: 'u3', $source: 'ios' } },
      { event: 'login', properties: { time: now - 3_600_000, distinct_id: 'u1' } },
    ];
    await ingestEvents(eventStoreOf(t.db), a.id, 'import', recent);
    const stamp = { $warehouse_import_id: 'imp-1', $warehouse_import_job_id: 'job-1', $import: true, $source: 'warehouse-import' };
    const history = [
      { event: 'legacy_purchase', properties: { time: now - 31 * DAY, distinct_id: 'u9', amount: 3 } },
      { event: 'legacy_purchase', properties: { time: now - 31 * DAY, distinct_id: 'u8', amount: 4 } },
      { event: 'signup', properties: { time: now - 31 * DAY, distinct_id: 'u7' } },
    ];
    await ingestEvents(eventStoreOf(t.db), a.id, 'warehouse-import', history, { stamp });
    await ingestEvents(eventStoreOf(t.db), b.id, 'import', [{ event: 'b_event', properties: { time: now - DAY, distinct_id: 'x' } }]);

    // Fixed-date events for bucket checks.
    const fixed = [
      ['2024-01-01T00:00:00Z', 'web'],
      ['2024-01-01T23:59:59.999Z', 'ios'],
      ['2024-01-02T05:30:00Z', 'web'],
      ['2024-01-08T00:00:00Z', 'web'], // Monday: a new week
      ['2024-02-01T10:00:00Z', 'android'],
    ] as const;
    await ingestEvents(
      eventStoreOf(t.db),
      a.id,
      'import',
      fixed.map(([iso, os], i) => ({ event: 'open', properties: { time: T(iso), distinct_id: `f${i}`, os, tags: i === 0 ? ['x', 'y'] : ['x'] } })),
    );

    const p = await applyProfileUpdates(t.db, a.id, [
      { $distinct_id: 'alice', $set: { $email: 'alice@example.com', plan: 'pro', seats: 5 } },
      { $distinct_id: 'bob', $set: { plan: 'free', seats: 1 } },
      { $distinct_id: 'carol', $set: { plan: 'pro', seats: 12 } },
      { $distinct_id: 'dave', $set: { plan: 'team' } },
    ]);
    expect(p.rejected).toEqual([]);
    await applyProfileUpdates(t.db, b.id, [{ $distinct_id: 'alice', $set: { plan: 'other-project' } }]);
    await applyGroupUpdates(t.db, a.id, [
      { $group_key: 'company', $group_id: 'acme', $set: { name: 'Acme', size: 50 } },
      { $group_key: 'company', $group_id: 'globex', $set: { name: 'Globex' } },
      { $group_key: 'team', $group_id: 'acme', $set: { name: 'not a company' } },
    ]);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  describe('GET /api/2.0/events/names', () => {
    const url = (p: { id: number }, extra: Record<string, string | number> = {}) =>
      `${app.url}/api/2.0/events/names${qs({ project_id: p.id, type: 'general', ...extra })}`;

    it('lists names with event time in the last 30 days only, most frequent first', async () => {
      const res = await get(url(a), a.basic);
      expect(res.status).toBe(200);
      expect(res.json()).toEqual(['signup', 'login']);
      // 31-day-old imports exist but are not in the catalog.
      expect(res.json()).not.toContain('legacy_purchase');
      expect((await get(url(a, { limit: 1 }), a.basic)).json()).toEqual(['signup']);
      expect((await get(`${app.url}/api/query/events/names${qs({ project_id: a.id })}`, a.basic)).json()).toEqual(['signup', 'login']);
    });

    it('keeps projects apart and rejects bad parameters', async () => {
      expect((await get(url(b), b.basic)).json()).toEqual(['b_event']);
      expect((await get(url(b), a.basic)).status).toBe(403);
      expect((await get(url(a))).status).toBe(401);
      const bads: Record<string, string | number>[] = [{ limit: 0 }, { limit: 'x' }, { type: 'weird' }];
      for (const bad of bads) {
        const res = await get(url(a, bad), a.basic);
        expect(res.status).toBe(400);
        expect(res.json()).toMatchObject({ code: 400, status: 'Bad Request' });
      }
    });
  });

  describe('GET /api/app/projects/{pid}/insights', () => {
    const url = (pid: number, params: Record<string, string | number | undefined>) =>
      `${app.url}/api/app/projects/${pid}/insights${qs(params)}`;

    it('counts old imported events the catalog leaves out, filtered by the warehouse stamps', async () => {
      const from = dayOf(now - 40 * DAY);
      const to = dayOf(now);
      const oldDay = dayOf(now - 31 * DAY);
      const res = await get(url(a.id, { event: 'legacy_purchase', from_date: from, to_date: to }), a.basic);
      expect(res.status).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ status: 'ok', from_date: from, to_date: to, unit: 'day', legend_size: 1 });
      expect(body.results.series).toHaveLength(41);
      expect(body.results.series[0]).toBe(from);
      expect(Object.keys(body.results.values)).toEqual(['legacy_purchase']);
      expect(body.results.values.legacy_purchase[oldDay]).toBe(2);
      const total = (v: Record<string, number>) => Object.values(v).reduce((s, n) => s + n, 0);
      expect(total(body.results.values.legacy_purchase)).toBe(2);

      for (const where of ['properties["$warehouse_import_id"] == "imp-1"', 'properties["$import"] == true', 'properties["$source"] == "warehouse-import"']) {
        const w = (await get(url(a.id, { from_date: from, to_date: to, where }), a.basic)).json();
        expect(Object.fromEntries(Object.entries(w.results.values).map(([k, v]) => [k, total(v as Record<string, number>)]))).toEqual({
          legacy_purchase: 2,
          signup: 1,
        });
      }
      const seg = (await get(url(a.id, { event: 'signup', from_date: from, to_date: to, on: 'properties["$source"]' }), a.basic)).json();
      expect(Object.fromEntries(Object.entries(seg.results.values).map(([k, v]) => [k, total(v as Record<string, number>)]))).toEqual({
        web: 2,
        ios: 1,
        'warehouse-import': 1,
      });
      expect(seg.legend_size).toBe(3);
      // A bare property name works as `on` too.
      const bare = (await get(url(a.id, { event: 'signup', from_date: from, to_date: to, on: '$source' }), a.basic)).json();
      expect(bare.results.values).toEqual(seg.results.values);
    });

    it('buckets by hour, day, week and month in UTC', async () => {
      const q = { event: 'open', from_date: '2024-01-01', to_date: '2024-02-29' };
      const day = (await get(url(a.id, { ...q, unit: 'day' }), a.basic)).json();
      expect(day.results.series).toHaveLength(60);
      expect(day.results.values.open).toMatchObject({ '2024-01-01': 2, '2024-01-02': 1, '2024-01-03': 0, '2024-01-08': 1, '2024-02-01': 1 });
      const week = (await get(url(a.id, { ...q, unit: 'week' }), a.basic)).json();
      expect(week.results.series[0]).toBe('2024-01-01');
      expect(week.results.values.open).toMatchObject({ '2024-01-01': 3, '2024-01-08': 1, '2024-01-29': 1 });
      const month = (await get(url(a.id, { ...q, unit: 'month' }), a.basic)).json();
      expect(month.results).toEqual({ series: ['2024-01-01', '2024-02-01'], values: { open: { '2024-01-01': 4, '2024-02-01': 1 } } });
      const hour = (await get(url(a.id, { event: 'open', from_date: '2024-01-01', to_date: '2024-01-01', unit: 'hour' }), a.basic)).json();
      expect(hour.results.series).toHaveLength(24);
      expect(hour.results.values.open['2024-01-01 00:00:00']).toBe(1);
      expect(hour.results.values.open['2024-01-01 23:00:00']).toBe(1);
      expect(hour.results.values.open['2024-01-01 12:00:00']).toBe(0);
    });

    it('segments by a property (lists count under each element), filters with where, limits rows', async () => {
      const q = { event: '["open"]', from_date: '2024-01-01', to_date: '2024-02-29', unit: 'month' };
      const byOs = (await get(url(a.id, { ...q, on: 'os' }), a.basic)).json();
      expect(byOs.results.values).toEqual({
        web: { '2024-01-01': 3, '2024-02-01': 0 },
        android: { '2024-01-01': 0, '2024-02-01': 1 },
        ios: { '2024-01-01': 1, '2024-02-01': 0 },
      });
      expect(Object.keys(byOs.results.values)).toEqual(['web', 'android', 'ios']);
      const top1 = (await get(url(a.id, { ...q, on: 'os', limit: 1 }), a.basic)).json();
      expect(Object.keys(top1.results.values)).toEqual(['web']);
      const filtered = (await get(url(a.id, { ...q, on: 'os', where: 'properties["os"] != "web"' }), a.basic)).json();
      expect(Object.keys(filtered.results.values).sort()).toEqual(['android', 'ios']);
      const tags = (await get(url(a.id, { ...q, on: 'properties["tags"]' }), a.basic)).json();
      expect(tags.results.values).toEqual({ x: { '2024-01-01': 4, '2024-02-01': 1 }, y: { '2024-01-01': 1, '2024-02-01': 0 } });
      const missing = (await get(url(a.id, { ...q, on: 'nope' }), a.basic)).json();
      expect(missing.results.values).toEqual({ undefined: { '2024-01-01': 4, '2024-02-01': 1 } });
      // A requested event with no data still gets its row of zeros.
      const zero = (await get(url(a.id, { event: 'never', from_date: '2024-01-01', to_date: '2024-01-02' }), a.basic)).json();
      expect(zero.results.values).toEqual({ never: { '2024-01-01': 0, '2024-01-02': 0 } });
    });

    it('is also served in Mixpanel\'s segmentation shape at /api/2.0/segmentation', async () => {
      const res = await get(
        `${app.url}/api/2.0/segmentation${qs({ project_id: a.id, event: 'open', from_date: '2024-01-01', to_date: '2024-02-29', unit: 'month' })}`,
        a.basic,
      );
      expect(res.json()).toEqual({
        data: { series: ['2024-01-01', '2024-02-01'], values: { open: { '2024-01-01': 4, '2024-02-01': 1 } } },
        legend_size: 1,
      });
      const bad = await get(`${app.url}/api/2.0/segmentation${qs({ project_id: a.id, from_date: '2024-01-01' })}`, a.basic);
      expect(bad.status).toBe(400);
      expect(bad.json()).toMatchObject({ code: 400, error: "'to_date' is required", request: expect.stringContaining('/api/2.0/segmentation') });
    });

    it('answers auth failures and bad parameters in the app error shape', async () => {
      const q = { from_date: '2024-01-01', to_date: '2024-01-02' };
      expect((await get(url(a.id, q))).status).toBe(401);
      const cross = await get(url(b.id, q), a.basic);
      expect(cross.status).toBe(403);
      expect(cross.json()).toEqual({ status: 'error', error: expect.any(String) });
      const cases: [Record<string, string | number | undefined>, RegExp][] = [
        [{ ...q, from_date: undefined }, /'from_date' is required/],
        [{ ...q, to_date: '01/02/2024' }, /'to_date' must be a date/],
        [{ from_date: '2024-01-03', to_date: '2024-01-02' }, /after/],
        [{ ...q, unit: 'year' }, /'unit' must be one of/],
        [{ ...q, unit: 'minute', from_date: '2023-01-01', to_date: '2024-01-01' }, /more than 10000 minute buckets/],
        [{ ...q, event: '["a",' }, /'event' must be a JSON array/],
        [{ ...q, where: 'properties["a"] ==' }, /invalid 'where' expression/],
        [{ ...q, on: 'properties["a"' }, /invalid 'on' expression/],
        [{ ...q, limit: 0 }, /'limit'/],
        [{ ...q, limit: 10_001 }, /'limit' must be between 1 and 10000/],
        [{ from_date: '2010-01-01', to_date: '2024-12-31', unit: 'month' }, /spans 5479 days; at most 1830/],
        [{ ...q, type: 'cohort' }, /'type' must be general, unique or average/],
        // A NUL cannot be stored, so it matches nothing; PostgreSQL refused it as a parameter (a 500).
        [{ ...q, event: 'sign\u0000up' }, /'event' must not contain a NUL character/],
        [{ ...q, where: 'properties["a"] == "\u0000"' }, /'where' must not contain a NUL character/],
      ];
      for (const [params, message] of cases) {
        const res = await get(url(a.id, params), a.basic);
        expect(res.status, JSON.stringify(params)).toBe(400);
        expect(res.json()).toMatchObject({ status: 'error', type: 'validation_error', error: expect.stringMatching(message) });
      }
      const badPid = await get(`${app.url}/api/app/projects/abc/insights${qs(q)}`, a.basic);
      expect(badPid.status).toBe(400);
    });
  });

  describe('GET|POST /api/2.0/engage', () => {
    const url = (p: { id: number }, params: Record<string, string | number | undefined> = {}) =>
      `${app.url}/api/2.0/engage${qs({ project_id: p.id, ...params })}`;

    it('a NUL in distinct_id, distinct_ids or data_group_id is a 400, not a 500', async () => {
      for (const params of [{ distinct_id: 'u\u0000' }, { distinct_ids: '["u1","\\u0000"]' }, { data_group_id: 'company\u0000' }]) {
        const res = await get(url(a, params), a.basic);
        expect(res.status, JSON.stringify(params)).toBe(400);
        expect(res.json()).toMatchObject({ code: 400, status: 'Bad Request', error: expect.stringMatching(/must not contain a NUL character/) });
      }
    });

    it('finds one profile by distinct_id, in Mixpanel\'s engage shape', async () => {
      const res = await get(url(a, { distinct_id: 'alice' }), a.basic);
      expect(res.status).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ page: 0, page_size: 1000, status: 'ok', total: 1, session_id: expect.any(String) });
      expect(body.results).toHaveLength(1);
      expect(body.results[0].$distinct_id).toBe('alice');
      expect(body.results[0].$properties).toMatchObject({ $email: 'alice@example.com', plan: 'pro', seats: 5 });
      const none = (await get(url(a, { distinct_id: 'nobody' }), a.basic)).json();
      expect(none).toMatchObject({ total: 0, results: [] });
    });

    it('finds several by distinct_ids, filters with where, trims with output_properties', async () => {
      const several = (await get(url(a, { distinct_ids: '["carol","alice","nobody"]' }), a.basic)).json();
      expect(several.results.map((r: any) => r.$distinct_id)).toEqual(['alice', 'carol']);
      const pro = (await get(url(a, { where: 'properties["plan"] == "pro" and properties["seats"] > 6' }), a.basic)).json();
      expect(pro).toMatchObject({ total: 1, results: [{ $distinct_id: 'carol' }] });
      const trimmed = (await get(url(a, { distinct_id: 'alice', output_properties: '["plan","nope"]' }), a.basic)).json();
      expect(trimmed.results[0].$properties).toEqual({ plan: 'pro' });
    });

    it('pages in distinct_id order, with or without a filter', async () => {
      const p0 = (await get(url(a, { page_size: 3 }), a.basic)).json();
      expect(p0).toMatchObject({ page: 0, page_size: 3, total: 4 });
      expect(p0.results.map((r: any) => r.$distinct_id)).toEqual(['alice', 'bob', 'carol']);
      const p1 = (await get(url(a, { page_size: 3, page: 1, session_id: p0.session_id }), a.basic)).json();
      expect(p1).toMatchObject({ page: 1, total: 4, session_id: p0.session_id });
      expect(p1.results.map((r: any) => r.$distinct_id)).toEqual(['dave']);
      const f1 = (await get(url(a, { page_size: 1, page: 1, where: 'defined(properties["seats"])' }), a.basic)).json();
      expect(f1).toMatchObject({ total: 3, results: [{ $distinct_id: 'bob' }] });
    });

    it('takes a form-encoded POST (as Mixpanel clients send) and the /api/query path', async () => {
      const res = await postForm(`${app.url}/api/query/engage?project_id=${a.id}`, a.basic, { distinct_ids: '["bob"]' });
      expect(res.status).toBe(200);
      expect(res.json().results.map((r: any) => r.$distinct_id)).toEqual(['bob']);
      const bodyProject = await postForm(`${app.url}/api/2.0/engage`, a.basic, { project_id: String(a.id), distinct_id: 'dave' });
      expect(bodyProject.json().results[0].$properties).toMatchObject({ plan: 'team' });
    });

    it('refuses a POST body it would not read (JSON) with 415, instead of ignoring its filter', async () => {
      const res = await fetch(`${app.url}/api/2.0/engage?project_id=${a.id}`, {
        method: 'POST',
        headers: { authorization: a.basic, 'content-type': 'application/json' },
        body: JSON.stringify({ distinct_id: 'bob' }),
      });
      expect(res.status).toBe(415);
      expect(await res.json()).toMatchObject({ code: 415, status: 'Unsupported Media Type', error: expect.stringMatching(/form-encoded/) });
      // A POST with no body still reads the query string.
      const bare = await fetch(`${app.url}/api/2.0/engage?project_id=${a.id}&distinct_id=bob`, { method: 'POST', headers: { authorization: a.basic } });
      expect(bare.status).toBe(200);
      expect((await bare.json()).results.map((r: any) => r.$distinct_id)).toEqual(['bob']);
    });

    it('reads group profiles with data_group_id = the group key', async () => {
      const all = (await get(url(a, { data_group_id: 'company' }), a.basic)).json();
      expect(all.results).toEqual([
        { $distinct_id: 'acme', $properties: { name: 'Acme', size: 50 } },
        { $distinct_id: 'globex', $properties: { name: 'Globex' } },
      ]);
      const one = (await get(url(a, { data_group_id: 'team', distinct_id: 'acme' }), a.basic)).json();
      expect(one.results).toEqual([{ $distinct_id: 'acme', $properties: { name: 'not a company' } }]);
    });

    it('keeps projects apart and rejects bad parameters', async () => {
      const other = (await get(url(b, { distinct_id: 'alice' }), b.basic)).json();
      expect(other.results[0].$properties).toMatchObject({ plan: 'other-project' });
      expect((await get(url(b, { distinct_id: 'alice' }), a.basic)).status).toBe(403);
      expect((await get(url(a, { distinct_id: 'alice' }))).status).toBe(401);
      const secret = (await get(`${app.url}/api/2.0/engage${qs({ distinct_id: 'alice' })}`, basicAuth(a.api_secret))).json();
      expect(secret.results[0].$properties.plan).toBe('pro');
      const cases: [Record<string, string | number>, RegExp][] = [
        [{ distinct_ids: '["a"' }, /'distinct_ids' must be a JSON array/],
        [{ distinct_ids: '[1]' }, /non-empty strings/],
        [{ distinct_id: 'a', distinct_ids: '["b"]' }, /not both/],
        [{ where: 'properties["plan"] ==' }, /invalid 'where' expression/],
        [{ page: -1 }, /'page'/],
        [{ page_size: 1001 }, /'page_size'/],
        [{ output_properties: 'plan' }, /'output_properties'/],
        [{ behaviors: 1 }, /not supported/],
        [{ filter_by_cohort: '{"id":1}' }, /not supported/],
      ];
      for (const [params, message] of cases) {
        const res = await get(url(a, params), a.basic);
        expect(res.status, JSON.stringify(params)).toBe(400);
        expect(res.json()).toMatchObject({ code: 400, status: 'Bad Request', error: expect.stringMatching(message), request: expect.any(String) });
      }
    });
  });
});
