/**
 * The event-store contract: what every EventStore implementation (src/store/event-store.ts)
 * must do, checked against small reference models written here — exact dedupe under replays and
 * concurrent writers, mirror update/delete by key, export scans (order, paging, filters), every
 * report type × unit with `on` and `where`, the catalog, usage, and identity links (first link
 * wins, retroactive resolution, two devices one user). Runs once per store kind (store-kinds.ts).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NormalizedEvent } from '../../src/domain/event-record.js';
import { toExportRecord } from '../../src/domain/export-record.js';
import { segmentLabels } from '../../src/domain/segmentation.js';
import { bucketStart, monthOf, UNITS } from '../../src/domain/time-buckets.js';
import { evaluate, truthy } from '../../src/domain/where-evaluate.js';
import { parseExpression } from '../../src/domain/where-expression.js';
import { toEventRows } from '../../src/store/event-rows.js';
import type { EventStore, ReportCell, ReportType, StoredEvent } from '../../src/store/event-store.js';
import { canPushDown } from '../../src/store/where-plan.js';
import type { StoreKind, TestStore } from '../helpers/store-kinds.js';

const T0 = Date.UTC(2024, 0, 29, 22, 30); // a Monday evening: buckets cross day, week and month edges
const HOUR = 3_600_000;

let projectSeq = 1000;
/** A project id of its own for each test (the store needs no project row). */
const newProject = () => (projectSeq += 1);

function ev(i: number, over: Partial<NormalizedEvent> = {}): NormalizedEvent {
  return { event: 'e', distinctId: `u${i}`, time: T0 + i * 1000, insertId: `id-${i}`, properties: { i }, ...over };
}

/** Mirror calls act for import 7: on the events that carry its stamp, as a sync stamps them. */
const MIRROR = { importId: '7' };
function owned(e: NormalizedEvent, importId = MIRROR.importId): NormalizedEvent {
  return { ...e, properties: { ...e.properties, $warehouse_import_id: importId } };
}

async function write(store: EventStore, projectId: number, events: NormalizedEvent[], source = 'import', now = T0): Promise<number> {
  return store.writeBatch({ projectId, source, rows: toEventRows(events), now });
}

async function scanAll(store: EventStore, projectId: number, extra: { where?: string; events?: string[]; fromMs?: number; toMs?: number; pageSize?: number } = {}) {
  const out: StoredEvent[] = [];
  for await (const page of store.scan({
    projectId,
    fromMs: extra.fromMs ?? 0,
    toMs: extra.toMs ?? 8.64e15,
    events: extra.events,
    where: extra.where ? parseExpression(extra.where) : undefined,
    pageSize: extra.pageSize ?? 1000,
  }))
    out.push(...page);
  return out;
}

/** A mixed dataset: every JSON type, lists, missing properties, several devices and users. */
function dataset(): NormalizedEvent[] {
  const oses = ['web', 'ios', 'android', 'web', undefined];
  const out: NormalizedEvent[] = [];
  for (let i = 0; i < 120; i++) {
    const props: Record<string, unknown> = { n: i % 7, price: (i % 5) * 1.5, flag: i % 3 === 0, name: `item-${i % 4}` };
    const os = oses[i % oses.length];
    if (os !== undefined) props.os = os;
    if (i % 4 === 0) props.tags = i % 8 === 0 ? ['x', 'y', 'x'] : [];
    if (i % 6 === 0) props.nothing = null;
    if (i % 9 === 0) props.empty = '';
    if (i % 10 === 0) props.nums = [1, 2.5];
    const anonymous = i % 3 !== 0;
    const device = `d${i % 11}`;
    out.push({
      event: ['open', 'buy', 'view'][i % 3]!,
      distinctId: anonymous ? `$device:${device}` : `user${i % 4}`,
      time: T0 + i * 37 * 60_000, // ~3 days, crossing midnight, Sunday/Monday and the month end
      insertId: `mix-${i}`,
      properties: props,
      ...(anonymous ? { deviceId: device } : {}),
      ...(i % 3 === 0 && i % 2 === 0 ? { link: { deviceId: device, userId: `user${i % 4}` } } : {}),
    });
  }
  return out;
}

/** The reference report: the same cells computed from the events and the links in memory. */
function referenceReport(
  events: NormalizedEvent[],
  links: Map<string, string>,
  q: { unit: (typeof UNITS)[number]; type: ReportType; on?: string; where?: string; events?: string[] },
): ReportCell[] {
  const on = q.on ? parseExpression(q.on) : undefined;
  const where = q.where ? parseExpression(q.where) : undefined;
  const cells = new Map<string, { segment: string; bucket: number; n: number; ids: Set<string> }>();
  for (const e of events) {
    if (q.events && !q.events.includes(e.event)) continue;
    const record = toExportRecord(e);
    if (where && !truthy(evaluate(where, record.properties))) continue;
    const resolved = (e.deviceId !== undefined ? links.get(e.deviceId) : undefined) ?? e.distinctId;
    const bucket = bucketStart(e.time, q.unit);
    for (const segment of on ? segmentLabels(evaluate(on, record.properties)) : [e.event]) {
      const key = `${segment}\u0000${bucket}`;
      let c = cells.get(key);
      if (!c) cells.set(key, (c = { segment, bucket, n: 0, ids: new Set() }));
      c.n += 1;
      c.ids.add(resolved);
    }
  }
  return [...cells.values()].map((c) => ({
    segment: c.segment,
    bucket: c.bucket,
    value: q.type === 'general' ? c.n : q.type === 'unique' ? c.ids.size : c.n / c.ids.size,
  }));
}

const sortCells = (cells: ReportCell[]) =>
  [...cells].sort((a, b) => (a.segment < b.segment ? -1 : a.segment > b.segment ? 1 : a.bucket - b.bucket)).map((c) => ({ ...c, value: Number(c.value.toFixed(9)) }));

/** First link of each device wins, in event order. */
function linksOf(events: NormalizedEvent[]): Map<string, string> {
  const links = new Map<string, string>();
  for (const e of events) if (e.link && !links.has(e.link.deviceId)) links.set(e.link.deviceId, e.link.userId);
  return links;
}

/** Long pushed-down filters, by name: each store's SQL must stay within its server's limits. */
export const LONG_WHERE_CASES: [string, string][] = [
  ['250 conditions joined by and', [...Array.from({ length: 250 }, (_, k) => `properties["price"] != ${k + 100}`), 'properties["n"] != 3'].join(' and ')],
  ['250 conditions joined by or', Array.from({ length: 250 }, (_, k) => `properties["n"] == ${k + 4}`).join(' or ')],
  ['in a list of 400 strings', `properties["name"] in [${Array.from({ length: 400 }, (_, k) => `"item-${k * 2}"`).join(', ')}]`],
];

/** `where` expressions of every pushed-down shape, over every JSON type and the key columns. */
export const WHERE_CASES = [
  'properties["os"] == "web"',
  'properties["os"] != "web"',
  '"web" == properties["os"]',
  'properties["n"] == 3',
  'properties["n"] > 3',
  'properties["n"] <= 3',
  '2 < properties["n"]',
  'properties["price"] >= 4.5',
  'properties["name"] > "item-1"',
  'properties["flag"] == true',
  'properties["flag"]',
  'not properties["flag"]',
  'boolean(properties["tags"])',
  'properties["nothing"] == null',
  'defined(properties["nothing"])',
  'defined(properties["os"])',
  'not defined(properties["os"])',
  'properties["empty"]',
  'properties["os"] in ["ios", "android"]',
  '"x" in properties["tags"]',
  '2.5 in properties["nums"]',
  '"tem-2" in properties["name"]',
  'properties["os"] == "web" and properties["n"] > 2',
  'properties["os"] == "ios" or properties["flag"]',
  'not (properties["os"] == "web" or properties["n"] < 2)',
  'properties["distinct_id"] == "user1"',
  '"$device:" in properties["distinct_id"]',
  'properties["$insert_id"] == "mix-7"',
  `properties["time"] >= ${(T0 + 40 * 37 * 60_000) / 1000}`,
  'properties["n"] == "3"',
  'properties["n"] > "a"',
  '1 + 1 == 2',
  'properties["missing"] != 1',
];

/** Random `where` text of the pushed-down shapes over the dataset's properties (and missing ones). */
const whereArbitrary: fc.Arbitrary<string> = (() => {
  const prop = fc.constantFrom('os', 'n', 'price', 'flag', 'name', 'tags', 'nothing', 'empty', 'nums', 'missing', 'distinct_id', '$insert_id', 'time').map((n) => `properties[${JSON.stringify(n)}]`);
  const lit = fc.oneof(
    fc.constantFrom('"web"', '"ios"', '"item-2"', '"x"', '""', '"$device:d1"', '"mix-3"', '"3"'),
    fc.constantFrom('0', '1', '2.5', '3', '4.5', '-1', `${(T0 + 50 * 37 * 60_000) / 1000}`),
    fc.constantFrom('true', 'false', 'null'),
  );
  const atom = fc.oneof(
    fc.tuple(prop, fc.constantFrom('==', '!=', '>', '>=', '<', '<='), lit).map(([p, op, v]) => `${p} ${op} ${v}`),
    fc.tuple(lit, fc.constantFrom('==', '<', '>='), prop).map(([v, op, p]) => `${v} ${op} ${p}`),
    fc.tuple(prop, fc.array(lit, { maxLength: 3 })).map(([p, vs]) => `${p} in [${vs.join(', ')}]`),
    fc.tuple(lit, prop).map(([v, p]) => `${v} in ${p}`),
    prop.map((p) => `defined(${p})`),
    prop.map((p) => `boolean(${p})`),
    prop,
  );
  const tree: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
    e: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      atom,
      fc.tuple(tie('e'), fc.constantFrom('and', 'or'), tie('e')).map(([a, op, b]) => `(${a}) ${op} (${b})`),
      tie('e').map((a) => `not (${a})`),
    ),
  })).e;
  return tree;
})();

export function eventStoreContract(kind: StoreKind): void {
  describe(`event store contract on ${kind.name}`, () => {
    let t: TestStore;
    let store: EventStore;
    beforeAll(async () => {
      t = await kind.open();
      store = t.store;
    }, 120_000);
    afterAll(async () => t?.destroy());

    describe('writeBatch', () => {
      it('stores each dedupe key once, however often replayed; returns how many were new; counts usage', async () => {
        const p = newProject();
        const batch = Array.from({ length: 50 }, (_, i) => ev(i));
        expect(await write(store, p, batch)).toBe(50);
        expect(await write(store, p, batch)).toBe(0);
        // Overlap: 25 old + 25 new; the same insert id with another time is another event.
        const next = [...batch.slice(25), ...Array.from({ length: 25 }, (_, i) => ev(100 + i))];
        expect(await write(store, p, next, 'track')).toBe(25);
        expect(await write(store, p, [ev(0, { time: T0 + 999_999 })])).toBe(1);
        // A key twice in one batch of otherwise new keys: stored once.
        expect(await write(store, p, [ev(200), ev(201), ev(200)])).toBe(2);
        expect(await store.count(p)).toBe(78);
        expect(await store.usageForMonth(p, monthOf(T0))).toEqual({ import: 53, track: 25 });
        expect(await store.count(newProject())).toBe(0);
      });

      it('stays exact under concurrent writers of overlapping batches', async () => {
        const p = newProject();
        // Odd writers send their batch backwards: overlapping keys in opposite orders must not deadlock.
        const writers = Array.from({ length: 6 }, (_, w) => {
          const batch = Array.from({ length: 200 }, (_, i) => ev((w * 70 + i) % 600));
          return w % 2 ? batch.reverse() : batch;
        });
        const distinct = new Set(writers.flat().map((e) => e.insertId)).size;
        const results = await Promise.all(writers.map((b, w) => write(store, p, b, w % 2 ? 'import' : 'track')));
        expect(results.reduce((a, b) => a + b, 0)).toBe(distinct);
        expect(await store.count(p)).toBe(distinct);
        const usage = await store.usageForMonth(p, monthOf(T0));
        expect((usage.import ?? 0) + (usage.track ?? 0)).toBe(distinct);
        expect(await Promise.all(writers.map((b) => write(store, p, b)))).toEqual([0, 0, 0, 0, 0, 0]);
      });

      it('stores properties, ids and times exactly as given', async () => {
        const p = newProject();
        const props = { s: 'ünï 💥', n: 1.25, big: 2 ** 52, neg: -3, b: false, z: null, list: [1, 'a', { k: [true] }], obj: { a: { b: 'c' } } };
        await write(store, p, [ev(1, { event: 'Späť', distinctId: 'd "q"', insertId: 'x'.repeat(36), time: T0 + 1, properties: props })]);
        const [e] = await scanAll(store, p);
        expect(e).toEqual({ event: 'Späť', distinctId: 'd "q"', time: T0 + 1, insertId: 'x'.repeat(36), properties: props, resolvedId: 'd "q"' });
      });

      it('keeps backslashes, tabs, newlines and a literal \\N in names, ids and properties (COPY text escapes)', async () => {
        const p = newProject();
        const odd = 'a\\b\tc\nd\re \\N \\\\t';
        const props = { [odd]: odd, path: 'C:\\temp\\new', json: '{"k":"v\\"w"}' };
        await write(store, p, [ev(2, { event: odd, distinctId: `u${odd}`, insertId: `i${odd}`, time: T0 + 2, properties: props })]);
        const [e] = await scanAll(store, p);
        expect(e).toEqual({ event: odd, distinctId: `u${odd}`, time: T0 + 2, insertId: `i${odd}`, properties: props, resolvedId: `u${odd}` });
        expect(await write(store, p, [ev(2, { event: odd, distinctId: `u${odd}`, insertId: `i${odd}`, time: T0 + 2, properties: props })])).toBe(0);
      });

      it('stores a batch whose text is mostly multi-byte (several times its UTF-16 length in UTF-8) exactly', async () => {
        const p = newProject();
        const batch = Array.from({ length: 40 }, (_, i) =>
          ev(i, { event: `事件${i}`, distinctId: `用户-${i}-😀`, properties: { text: '漢字かな🚀'.repeat(300 + i), i } }),
        );
        expect(await write(store, p, batch)).toBe(40);
        const stored = await scanAll(store, p);
        expect(stored.map((e) => [e.event, e.distinctId, e.properties]).sort((a, b) => (a[0] as string).localeCompare(b[0] as string))).toEqual(
          batch.map((e) => [e.event, e.distinctId, e.properties]).sort((a, b) => (a[0] as string).localeCompare(b[0] as string)),
        );
      });
    });

    describe('mirror update and delete by (project, import, insert_id)', () => {
      it('replaces, inserts and deletes by key; other projects untouched', async () => {
        const p = newProject();
        const other = newProject();
        const base = Array.from({ length: 10 }, (_, i) => owned(ev(i)));
        await write(store, p, base);
        await write(store, other, base);
        const changed = [
          ev(1, { time: T0 + 500_000, properties: { i: 1, fixed: true } }), // changed time and properties
          ev(2, { event: 'renamed', properties: {} }),
          ev(50), // not stored yet: inserted
        ].map((e) => owned(e));
        expect(await store.updateByKey({ projectId: p, source: 'warehouse-import', rows: toEventRows(changed), now: T0 }, MIRROR)).toEqual({ updated: 2, inserted: 1, skipped: [] });
        expect(await store.deleteByKey(p, MIRROR, ['id-3', 'id-4', 'id-404', 'id-3'])).toBe(2);
        const after = await scanAll(store, p);
        expect(after.map((e) => e.insertId).sort()).toEqual(['id-0', 'id-1', 'id-2', 'id-5', 'id-50', 'id-6', 'id-7', 'id-8', 'id-9']);
        expect(after.find((e) => e.insertId === 'id-1')).toMatchObject({ time: T0 + 500_000, properties: { i: 1, fixed: true } });
        expect(after.find((e) => e.insertId === 'id-2')).toMatchObject({ event: 'renamed', properties: {} });
        expect(await store.count(p)).toBe(9);
        expect(await store.count(other)).toBe(10);
        // Idempotent: the same update again changes nothing further.
        expect(await store.updateByKey({ projectId: p, source: 'warehouse-import', rows: toEventRows(changed), now: T0 }, MIRROR)).toEqual({ updated: 3, inserted: 0, skipped: [] });
        expect(await store.count(p)).toBe(9);
        expect(await store.deleteByKey(p, MIRROR, ['id-3'])).toBe(0);
      });

      it('touches only its own import\'s events: another import\'s and /import\'s with the same insert id stay', async () => {
        const p = newProject();
        const imported = ev(1, { event: 'from-import', distinctId: 'x' }); // no stamp
        const otherImport = owned(ev(1, { event: 'from-import-8' }), '8');
        await write(store, p, [imported, otherImport, owned(ev(2))]);
        // Import 7's id-1 is new to it (inserted beside the others), its id-2 an update.
        const rows = [owned(ev(1)), owned(ev(2, { properties: { i: 2, changed: true } }))];
        expect(await store.updateByKey({ projectId: p, source: 'warehouse-import', rows: toEventRows(rows), now: T0 }, MIRROR)).toEqual({ updated: 1, inserted: 1, skipped: [] });
        expect(await store.count(p)).toBe(4);
        expect(await store.deleteByKey(p, MIRROR, ['id-1', 'id-2'])).toBe(2);
        const left = await scanAll(store, p);
        expect(left.map((e) => e.event).sort()).toEqual(['from-import', 'from-import-8']);
        expect(await store.deleteByKey(p, { importId: '9' }, ['id-1'])).toBe(0);
        expect(await store.count(p)).toBe(2);
      });
      it('deletes every event of one import, whatever its mode, and nothing else', async () => {
        const p = newProject();
        const other = newProject();
        await write(store, p, [owned(ev(1)), owned(ev(2)), owned(ev(3, { event: 'other-name', insertId: 'id-1' })), owned(ev(4), '8'), ev(5)]);
        await write(store, other, [owned(ev(1))]);
        // A mirror replacement and a delete first: only live versions count.
        await store.updateByKey({ projectId: p, source: 'warehouse-import', rows: toEventRows([owned(ev(2, { time: T0 + 77_000 }))]), now: T0 }, MIRROR);
        await store.deleteByKey(p, MIRROR, ['id-1']);
        await write(store, p, [owned(ev(6))]);
        expect(await store.deleteImportEvents(p, MIRROR)).toBe(2);
        expect((await scanAll(store, p)).map((e) => e.insertId).sort()).toEqual(['id-4', 'id-5']);
        expect(await store.count(other)).toBe(1);
        expect(await store.deleteImportEvents(p, MIRROR)).toBe(0);
      });

      it('skips a row whose dedupe key another source\'s event holds, leaving that event as it is', async () => {
        const p = newProject();
        const fromApi = ev(1, { properties: { src: 'api' } });
        const fromImport8 = owned(ev(2, { properties: { src: 'import 8' } }), '8');
        const movedOnto = ev(3, { time: T0 + 99_000, properties: { src: 'api' } });
        await write(store, p, [fromApi, fromImport8, owned(ev(3)), movedOnto]);
        // Rows 1 and 2 carry exactly the others' keys; row 3 moves import 7's event onto the key /import holds.
        const rows = [owned(ev(1, { properties: { src: 'warehouse' } })), owned(ev(2, { properties: { src: 'warehouse' } })), owned(ev(3, { time: T0 + 99_000 }))];
        const result = await store.updateByKey({ projectId: p, source: 'warehouse-import', rows: toEventRows(rows), now: T0 }, MIRROR);
        expect({ ...result, skipped: [...result.skipped].sort() }).toEqual({ updated: 0, inserted: 0, skipped: ['id-1', 'id-2', 'id-3'] });
        const after = await scanAll(store, p);
        expect(after.map((e) => [e.insertId, e.time, e.properties.src]).sort()).toEqual([
          ['id-1', T0 + 1000, 'api'],
          ['id-2', T0 + 2000, 'import 8'],
          ['id-3', T0 + 99_000, 'api'],
        ]);
        expect(after.every((e) => e.properties.$warehouse_import_id !== MIRROR.importId)).toBe(true);
        expect(await store.deleteByKey(p, MIRROR, ['id-1', 'id-2', 'id-3'])).toBe(0);
        expect(await store.count(p)).toBe(3);
      });
    });

    describe('scan', () => {
      it('pages in time order with ties, within [from, to), by event name and where', async () => {
        const p = newProject();
        // 25 events on 5 distinct times (ties), written out of order.
        const events = Array.from({ length: 25 }, (_, i) => ev(i, { time: T0 + (4 - (i % 5)) * HOUR, event: i % 2 ? 'a' : 'b' }));
        await write(store, p, events);
        const all = await scanAll(store, p, { pageSize: 3 });
        expect(all).toHaveLength(25);
        expect(new Set(all.map((e) => e.insertId)).size).toBe(25);
        for (let i = 1; i < all.length; i++) expect(all[i]!.time).toBeGreaterThanOrEqual(all[i - 1]!.time);
        const window = await scanAll(store, p, { fromMs: T0 + HOUR, toMs: T0 + 3 * HOUR, pageSize: 4 });
        expect(window.map((e) => e.time).every((tm) => tm >= T0 + HOUR && tm < T0 + 3 * HOUR)).toBe(true);
        expect(window).toHaveLength(10);
        expect((await scanAll(store, p, { events: ['a'] })).every((e) => e.event === 'a')).toBe(true);
        expect(await scanAll(store, p, { events: ['a'] })).toHaveLength(12);
        const filtered = await scanAll(store, p, { where: 'properties["i"] >= 20', pageSize: 2 });
        expect(filtered.map((e) => e.insertId).sort()).toEqual(['id-20', 'id-21', 'id-22', 'id-23', 'id-24']);
      });

      it('compares with subnormal numbers exactly (18.16 refuses `5e-324` as a literal)', async () => {
        const p = newProject();
        const values = [5e-324, -5e-324, 1e-310, 2.2250738585072014e-308, 0, 1];
        await write(store, p, values.map((s, i) => ev(i, { properties: { s } })));
        const pick = async (where: string) => (await scanAll(store, p, { where })).map((e) => e.properties.s).sort((a, b) => Number(a) - Number(b));
        expect(await pick('properties["s"] == 5e-324')).toEqual([5e-324]);
        expect(await pick('properties["s"] == -5e-324')).toEqual([-5e-324]);
        expect(await pick('properties["s"] > 0 and properties["s"] < 1e-308')).toEqual([5e-324, 1e-310]);
        expect(await pick('properties["s"] in [1e-310, 1]')).toEqual([1e-310, 1]);
      });

      it('random pushed-down where expressions select exactly what the evaluator selects', async () => {
        await fc.assert(
          fc.asyncProperty(whereArbitrary, async (where) => {
            await expectEvaluatorSelection(where);
          }),
          { numRuns: 60, seed: 1303 },
        );
      });

      /** Scans with `where` and returns the ids the evaluator selects, after checking the store returned exactly those. */
      async function expectEvaluatorSelection(where: string): Promise<string[]> {
        const p = projectWith.get('where') ?? (await seed('where'));
        const expr = parseExpression(where);
        expect(canPushDown(expr)).toBe(true);
        const expected = dataset()
          .filter((e) => truthy(evaluate(expr, toExportRecord(e).properties)))
          .map((e) => e.insertId)
          .sort();
        const got = (await scanAll(store, p, { where })).map((e) => e.insertId).sort();
        expect(got).toEqual(expected);
        return expected;
      }

      it.each(WHERE_CASES)('where %s selects exactly what the evaluator selects', async (where) => {
        await expectEvaluatorSelection(where);
      });

      it.each(LONG_WHERE_CASES)('where of %s selects exactly what the evaluator selects', async (_name, where) => {
        const expected = await expectEvaluatorSelection(where);
        expect(expected.length).toBeGreaterThan(0);
        expect(expected.length).toBeLessThan(dataset().length);
      });
    });

    const projectWith = new Map<string, number>();
    async function seed(name: string): Promise<number> {
      const p = newProject();
      projectWith.set(name, p);
      // Two batches, so links made in the second resolve events of the first (retroactive).
      const data = dataset();
      await write(store, p, data.slice(0, 60));
      await write(store, p, data.slice(60));
      return p;
    }

    describe('report (pushed down)', () => {
      const types: ReportType[] = ['general', 'unique', 'average'];
      const cases: { on?: string; where?: string; events?: string[] }[] = [
        {},
        { events: ['open', 'buy'] },
        { on: 'properties["os"]' },
        { on: 'properties["tags"]' },
        { on: 'properties["n"]' },
        { on: 'properties["flag"]' },
        { on: 'properties["nothing"]' },
        { on: 'properties["nums"]' },
        { on: 'properties["distinct_id"]' },
        { on: 'properties["os"]', where: 'properties["n"] > 2 and properties["os"] != "web"' },
        { where: '"x" in properties["tags"] or properties["flag"]', events: ['open'] },
      ];
      for (const unit of UNITS)
        for (const type of types)
          it(`${type} by ${unit} matches the reference for every on/where`, async () => {
            const p = projectWith.get('report') ?? (await seed('report'));
            const data = dataset();
            const links = linksOf(data);
            for (const c of cases) {
              const got = await store.report({
                projectId: p,
                fromMs: T0 - 40 * 24 * HOUR,
                toMs: T0 + 40 * 24 * HOUR,
                unit,
                type,
                events: c.events,
                on: c.on ? parseExpression(c.on) : undefined,
                where: c.where ? parseExpression(c.where) : undefined,
              });
              expect(sortCells(got), JSON.stringify(c)).toEqual(sortCells(referenceReport(data, links, { unit, type, ...c })));
            }
          });

      it('segments by the newest version: updates that change the property, deletes and replays', async () => {
        const p = newProject();
        const data = dataset().map((e) => owned(e));
        await write(store, p, data);
        const changed = data.filter((_, i) => i % 4 === 1).map((e, i) => ({ ...e, properties: { ...e.properties, os: i % 2 ? 'changed' : ['web', 'x'] } }));
        await store.updateByKey({ projectId: p, source: 'warehouse-import', rows: toEventRows(changed), now: T0 }, MIRROR);
        const gone = data.filter((_, i) => i % 7 === 3).map((e) => e.insertId);
        await store.deleteByKey(p, MIRROR, gone);
        await write(store, p, data.slice(0, 30)); // replays of stored (and of deleted) keys
        const byId = new Map(changed.map((e) => [e.insertId, e]));
        const expectedEvents = data.filter((e) => !gone.includes(e.insertId)).map((e) => byId.get(e.insertId) ?? e);
        // Replays of deleted keys are new events again (a delete frees its key).
        expectedEvents.push(...data.slice(0, 30).filter((e) => gone.includes(e.insertId)));
        for (const on of ['properties["os"]', undefined]) {
          const got = await store.report({ projectId: p, fromMs: T0 - HOUR, toMs: T0 + 40 * 24 * HOUR, unit: 'day', type: 'general', on: on ? parseExpression(on) : undefined });
          expect(sortCells(got), String(on)).toEqual(sortCells(referenceReport(expectedEvents, new Map(), { unit: 'day', type: 'general', on })));
        }
      });

      it('counts only the time range asked', async () => {
        const p = projectWith.get('report') ?? (await seed('report'));
        const got = await store.report({ projectId: p, fromMs: T0, toMs: T0 + 24 * HOUR, unit: 'day', type: 'general' });
        const expected = referenceReport(
          dataset().filter((e) => e.time >= T0 && e.time < T0 + 24 * HOUR),
          new Map(),
          { unit: 'day', type: 'general' },
        );
        expect(sortCells(got)).toEqual(sortCells(expected));
      });

      it('buckets every unit as domain/time-buckets does, events deep into their minute included', async () => {
        // ClickHouse 18.16 typed `Int64 % 60000` as a 16-bit integer: from 32,768 ms into a minute the
        // remainder wrapped negative and the event was counted in the minute before.
        const p = newProject();
        const events = [0, 32_767, 32_768, 40_000, 59_999, 60_000, 3_599_999, 86_399_999].map((d, i) => ev(i, { time: T0 + d }));
        await write(store, p, events);
        for (const unit of ['minute', 'hour', 'day', 'week', 'month'] as const) {
          const got = await store.report({ projectId: p, fromMs: T0 - HOUR, toMs: T0 + 48 * HOUR, unit, type: 'general' });
          expect(sortCells(got), unit).toEqual(sortCells(referenceReport(events, new Map(), { unit, type: 'general' })));
        }
      });
    });

    describe('event catalog', () => {
      it('names since a time, most frequent first, ties by name, limited', async () => {
        const p = newProject();
        const names = ['b', 'a', 'c', 'a', 'b', 'a', 'old', 'old', 'old', 'old'];
        await write(
          store,
          p,
          names.map((n, i) => ev(i, { event: n, time: n === 'old' ? T0 - 100 * 24 * HOUR : T0 + i })),
        );
        expect(await store.eventNames(p, T0 - 24 * HOUR, 10)).toEqual([
          { event: 'a', count: 3 },
          { event: 'b', count: 2 },
          { event: 'c', count: 1 },
        ]);
        expect(await store.eventNames(p, T0 - 24 * HOUR, 1)).toEqual([{ event: 'a', count: 3 }]);
      });
    });

    describe('identity links', () => {
      const anon = (i: number, device: string, time = T0 + i * 1000) => ev(i, { distinctId: `$device:${device}`, deviceId: device, time, event: 'view' });
      const linking = (i: number, device: string, user: string) => ev(i, { distinctId: user, link: { deviceId: device, userId: user }, event: 'login' });
      const unique = async (p: number) =>
        (await store.report({ projectId: p, fromMs: 0, toMs: 8.64e15, unit: 'month', type: 'unique', on: parseExpression('properties["all"]') }))
          .reduce((s, c) => s + c.value, 0);

      it('resolve earlier anonymous events retroactively; the first link of a device wins for good', async () => {
        const p = newProject();
        await write(store, p, [anon(1, 'dA'), anon(2, 'dA'), anon(3, 'dB')]);
        expect(await store.identityOf(p, '$device:dA')).toEqual({ userId: null, deviceIds: ['dA'] });
        expect((await scanAll(store, p)).map((e) => e.resolvedId)).toEqual(['$device:dA', '$device:dA', '$device:dB']);
        // Months later, dA signs in as alice.
        await write(store, p, [linking(4, 'dA', 'alice')]);
        expect((await scanAll(store, p)).map((e) => e.resolvedId)).toEqual(['alice', 'alice', '$device:dB', 'alice']);
        // A second user on a linked device does not steal it — not even in the same batch.
        await write(store, p, [linking(5, 'dA', 'bob'), linking(6, 'dC', 'bob'), linking(7, 'dC', 'carol')]);
        expect(await store.identityOf(p, 'alice')).toEqual({ userId: 'alice', deviceIds: ['dA'] });
        expect(await store.identityOf(p, '$device:dA')).toEqual({ userId: 'alice', deviceIds: ['dA'] });
        expect(await store.identityOf(p, 'dA')).toEqual({ userId: 'alice', deviceIds: ['dA'] });
        expect(await store.identityOf(p, 'bob')).toEqual({ userId: 'bob', deviceIds: ['dC'] });
        expect(await store.identityOf(p, 'carol')).toEqual({ userId: 'carol', deviceIds: [] });
        // Bob's own event stays bob's even though it names dA.
        expect((await scanAll(store, p)).find((e) => e.insertId === 'id-5')?.resolvedId).toBe('bob');
        // Replays change nothing.
        await write(store, p, [linking(4, 'dA', 'alice'), linking(5, 'dA', 'bob')]);
        expect(await store.identityOf(p, '$device:dA')).toEqual({ userId: 'alice', deviceIds: ['dA'] });
        expect(await store.identityOf(newProject(), '$device:dA')).toEqual({ userId: null, deviceIds: ['dA'] });
        // The same answers in bulk: linked devices only, the first link each.
        expect(await store.usersOfDevices(p, ['dA', 'dB', 'dC', 'dA', 'nobody'])).toEqual(new Map([['dA', 'alice'], ['dC', 'bob']]));
        expect(await store.usersOfDevices(p, [])).toEqual(new Map());
        expect(await store.usersOfDevices(newProject(), ['dA'])).toEqual(new Map());
      });

      it("a link written in a caller's transaction that rolls back is written again by the next batch", async () => {
        const p = newProject();
        const within = (events: NormalizedEvent[], outcome: 'commit' | 'rollback') =>
          t.db
            .transaction(async (trx) => {
              await store.writeBatch({ projectId: p, source: 'migration', rows: toEventRows(events), now: T0 }, { within: trx });
              if (outcome === 'rollback') throw new Error('the run failed');
            })
            .catch((err: Error) => {
              if (err.message !== 'the run failed') throw err;
            });
        await within([linking(1, 'dR', 'rita')], 'rollback');
        await within([linking(2, 'dR', 'rita')], 'commit');
        expect(await store.identityOf(p, '$device:dR')).toEqual({ userId: 'rita', deviceIds: ['dR'] });
        // Committed in a caller's transaction, the link still wins for good.
        await within([linking(3, 'dR', 'sam')], 'commit');
        await write(store, p, [linking(4, 'dR', 'sam')]);
        expect(await store.identityOf(p, '$device:dR')).toEqual({ userId: 'rita', deviceIds: ['dR'] });
      });

      it('concurrent writers linking the same devices in opposite orders all succeed; each device has one user', async () => {
        const p = newProject();
        const devices = Array.from({ length: 2000 }, (_, i) => `dev${i}`);
        // Each writer links every device (to its own user) and replays the others' events, in its own order.
        const batches = Array.from({ length: 6 }, (_, w) => {
          const order = w % 2 ? [...devices].reverse() : devices;
          return order.map((d, i) => linking(w * 10_000 + i, d, `user${w}`));
        });
        const results = await Promise.all(batches.map((b) => write(store, p, b)));
        expect(results.reduce((a, b) => a + b, 0)).toBe(6 * devices.length);
        const owners = await Promise.all(devices.map((d) => store.identityOf(p, `$device:${d}`)));
        for (const o of owners) expect(o.userId).toMatch(/^user[0-5]$/);
        // In bulk (more devices than one lookup chunk of the SQL stores): the same owners.
        const bulk = await store.usersOfDevices(p, devices);
        expect(devices.map((d) => bulk.get(d))).toEqual(owners.map((o) => o.userId));
        const byUser = await Promise.all(Array.from({ length: 6 }, (_, w) => store.identityOf(p, `user${w}`)));
        expect(byUser.reduce((n, u) => n + u.deviceIds.length, 0)).toBe(devices.length);
      });

      it('two devices of one user count as one unique user; average is events per user', async () => {
        const p = newProject();
        const all = { all: 1 };
        await write(store, p, [
          { ...anon(1, 'd1'), properties: all },
          { ...anon(2, 'd2'), properties: all },
          { ...anon(3, 'd3'), properties: all },
        ]);
        expect(await unique(p)).toBe(3);
        await write(store, p, [
          { ...linking(4, 'd1', 'ann'), properties: all },
          { ...linking(5, 'd2', 'ann'), properties: all },
        ]);
        expect(await unique(p)).toBe(2); // ann (d1, d2, her own 2 events) and $device:d3
        expect(await store.identityOf(p, 'ann')).toEqual({ userId: 'ann', deviceIds: ['d1', 'd2'] });
        const avg = await store.report({ projectId: p, fromMs: 0, toMs: 8.64e15, unit: 'month', type: 'average' });
        expect(avg.map((c) => [c.segment, c.value]).sort()).toEqual([
          ['login', 2],
          ['view', 1.5],
        ]);
      });
    });
  });
}
