/**
 * Mirror syncs (sync_mode "mirror") end to end: a table mirrored, then rows inserted, updated
 * (a property set to NULL, a changed event time) and deleted in the warehouse; the next run's
 * history counts exactly those changes and the project equals the table row for row (events
 * through /api/2.0/export; people and group profiles as stored). A run after no change changes
 * nothing and says so.
 *
 * Every event store (SQLite, PostgreSQL, ClickHouse, the ClickHouse cluster) runs the events,
 * people and groups cases from a SQLite source, with the events run split into partitions
 * (SYNC_PARTITION_ROWS); every other source type runs the events case (unpartitioned) into SQLite.
 * A worker killed mid-run: test/e2e/warehouse-mirror-crash.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countProfilesIn, profilesAt } from '../../src/db/profile-read.repo.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { bigqueryFixtureWith, databricksFixtureWith } from '../helpers/cloud-sources.js';
import type { TestDb } from '../helpers/db.js';
import { startInProcessWorker, type InProcessWorker } from '../helpers/job-platform.js';
import { redisKinds, redisOverrides, type RedisKind } from '../helpers/redis-kinds.js';
import { get, lines, qs } from '../helpers/read-back.js';
import { createStoreTestDb, storeKindNames } from '../helpers/store-kinds.js';
import {
  mysqlSourceFixture,
  postgresSourceFixture,
  redshiftSourceFixture,
  snowflakeSourceFixture,
  sqliteSourceFixture,
  type WarehouseSourceFixture,
  type WarehouseSourceHandle,
} from '../helpers/warehouse-sources.js';
import { call, createSourceAndImport, manualSync, waitForRun, type Api } from '../helpers/warehouse.js';
import { PROFILES_NEED_FULL_READ } from '../../jobs/warehouse-sync.changes.js';

const T0 = Date.UTC(2024, 5, 1);

type EvRow = {
  id: number;
  insert_id: string;
  event: string;
  ts: number;
  user_id: string;
  plan: string | null;
  amount: number | null;
};

const evRow = (id: number): EvRow => ({
  id,
  insert_id: `e-${id}`,
  event: `ev${id % 5}`,
  ts: T0 + id * 1000,
  user_id: `u${id % 97}`,
  plan: id % 3 === 0 ? null : `plan-${id % 4}`,
  amount: id % 2 === 0 ? id / 2 : null,
});

const EV_COLUMNS = [
  { name: 'id', type: 'integer' as const, notNull: true },
  { name: 'insert_id', type: 'text' as const, notNull: true },
  { name: 'event', type: 'text' as const, notNull: true },
  { name: 'ts', type: 'integer' as const, notNull: true },
  { name: 'user_id', type: 'text' as const },
  { name: 'plan', type: 'text' as const },
  { name: 'amount', type: 'real' as const },
];

const PROFILE_COLUMNS = [
  { name: 'id', type: 'text' as const, notNull: true },
  { name: 'updated', type: 'integer' as const, notNull: true },
  { name: 'name', type: 'text' as const },
  { name: 'tier', type: 'text' as const },
];
const profileRow = (i: number) => ({ id: `p${i}`, updated: T0 + i, name: `name ${i}`, tier: i % 2 === 0 ? 'gold' : null });

/** A mirror events import of a table with EV_COLUMNS. */
const mirrorEventsImport = (table: string) => ({
  import_type: 'events',
  table_params: { table },
  sync_mode: 'mirror',
  schedule: 'api_only',
  event_column_name: 'event',
  time_column_name: 'ts',
  insert_id_column_name: 'insert_id',
  user_column_name: 'user_id',
});

/** What a stored event of `r` looks like: the mapped columns, and the rest as properties (nulls left out). */
function expectedEvent(r: EvRow) {
  const props: Record<string, unknown> = { id: r.id };
  if (r.plan !== null) props.plan = r.plan;
  if (r.amount !== null) props.amount = r.amount;
  return { event: r.event, time: r.ts, distinct_id: r.user_id, insert_id: r.insert_id, props };
}

/** A mirror harness: one app, one worker and one source per describe. */
function harness(storeKind: string, fixture: WarehouseSourceFixture, overrides: Parameters<typeof startTestApp>[1] = {}) {
  const h = {} as { t: TestDb; app: TestApp; worker: InProcessWorker; src: WarehouseSourceHandle; p: SeededProject; api: Api };
  beforeAll(async () => {
    h.t = await createStoreTestDb(storeKind);
    h.src = await fixture.create();
    h.app = await startTestApp(h.t.db, { ...h.src.serverConfig, WAREHOUSE_READER_THREAD: 'off', ...overrides });
    h.worker = await startInProcessWorker(h.t.db, h.app.config, { queueNames: ['warehouse-sync'] });
    h.p = await seedProject(h.t.db);
    h.api = { url: h.app.url, basic: h.p.basic, projectId: h.p.id };
  }, 120_000);
  afterAll(async () => {
    await h.worker?.close();
    await h.app?.queues.queues['warehouse-sync'].obliterate({ force: true });
    await h.app?.close();
    await h.src?.cleanup();
    await h.t?.destroy();
  });
  return h;
}

/** A call on the project's app API (`/api/app/projects/{pid}{path}`). */
async function appCall(api: Api, method: string, path: string, body?: unknown) {
  const res = await fetch(`${api.url}/api/app/projects/${api.projectId}${path}`, {
    method,
    headers: { authorization: api.basic, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function syncOnce(api: Api, importId: number) {
  const { run_id } = await manualSync(api, importId);
  const run = await waitForRun(api, importId, run_id, 120_000);
  expect(run.status, `${run.error} ${JSON.stringify(run.log)}`).toBe('SUCCEEDED');
  return run;
}

const changes = (run: any) => [run.num_events_imported, run.num_events_updated, run.num_events_deleted];

async function exportedEvents(api: Api, appUrl: string) {
  const res = await get(`${appUrl}/api/2.0/export${qs({ project_id: api.projectId, from_date: '2024-05-31', to_date: '2024-07-31' })}`, api.basic);
  expect(res.status).toBe(200);
  return lines(res.text).map((l) => {
    const { time, distinct_id, $insert_id, ...rest } = l.properties;
    const props: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(rest)) if (!k.startsWith('$') && k !== 'mp_processing_time_ms') props[k] = v;
    return { event: l.event, time: Math.round(Number(time) * 1000), distinct_id, insert_id: $insert_id, props };
  });
}

const byInsertId = <T extends { insert_id: string }>(xs: T[]) => [...xs].sort((a, b) => (a.insert_id < b.insert_id ? -1 : a.insert_id > b.insert_id ? 1 : 0));

/**
 * The events case: N rows mirrored; then 70 inserted, 100 updated (50 with a property set to
 * NULL, 50 with a later event time), 50 deleted; then nothing.
 */
async function mirrorEventsCase(
  h: ReturnType<typeof harness>,
  n: number,
  expectPartitions: boolean,
  { api = h.api, name = 'mirror_ev', tracked = false }: { api?: Api; name?: string; tracked?: boolean } = {},
) {
  const table = new Map<number, EvRow>();
  for (let i = 1; i <= n; i++) table.set(i, evRow(i));
  await h.src.createTable({ name, columns: EV_COLUMNS });
  await h.src.insertRows(name, [...table.values()]);
  if (tracked) await h.src.enableChangeTracking!(name);
  const { importId } = await createSourceAndImport(api, h.src.sourceBody(), mirrorEventsImport(h.src.tableRef(name)));

  const first = await syncOnce(api, importId);
  expect(changes(first)).toEqual([n, 0, 0]);
  if (expectPartitions) expect(first.partitions.total).toBeGreaterThan(1);

  // In the warehouse: 70 new rows, 50 rows' plan set to NULL, 50 rows' time moved, 50 rows deleted.
  const added = Array.from({ length: 70 }, (_, k) => evRow(n + 1 + k));
  await h.src.insertRows(name, added);
  for (const r of added) table.set(r.id, r);
  await h.src.exec(`UPDATE ${name} SET plan = NULL WHERE id BETWEEN 1 AND 75 AND plan IS NOT NULL`);
  const nulled = [...table.values()].filter((r) => r.id <= 75 && r.plan !== null);
  expect(nulled.length).toBe(50);
  for (const r of nulled) r.plan = null;
  await h.src.exec(`UPDATE ${name} SET ts = ts + 7000 WHERE id BETWEEN 101 AND 150`);
  for (let i = 101; i <= 150; i++) table.get(i)!.ts += 7000;
  await h.src.exec(`DELETE FROM ${name} WHERE id BETWEEN 201 AND 250`);
  for (let i = 201; i <= 250; i++) table.delete(i);

  const second = await syncOnce(api, importId);
  expect(changes(second)).toEqual([70, 100, 50]);
  // A partition without changes says so for itself, not that the table is unchanged.
  expect(second.log.join('\n')).not.toMatch(/unchanged/);
  // A full read reads every row; a change read only the 220 changed ones.
  expect(second.rows_read).toBe(tracked ? 220 : n + 20);
  if (tracked) expect(second.log.join('\n')).toMatch(/reading the changes since .* \(the warehouse's change tracking\)/);
  const exported = await exportedEvents(api, h.app.url);
  expect(byInsertId(exported)).toEqual(byInsertId([...table.values()].map(expectedEvent)));

  const third = await syncOnce(api, importId);
  expect(changes(third)).toEqual([0, 0, 0]);
  expect(third.rows_read).toBe(tracked ? 0 : n + 20);
  expect(third.log.join('\n')).toMatch(/the table is unchanged since the last run, so nothing changed/);
  expect((await exportedEvents(api, h.app.url)).length).toBe(table.size);

  // Usage counts the replaced and deleted events apart from the new ones.
  const usage = await appCall(api, 'GET', '/usage');
  if (new Date().toISOString().slice(0, 7) === usage.body.results.month) {
    expect(usage.body.results).toMatchObject({ events_updated: 100, events_deleted: 50 });
    expect(usage.body.results.sources['warehouse-import']).toBe(n + 70);
  }
  return { importId, exported };
}

/** People or groups: 300 rows; then 20 inserted, 30 updated (10 with a column now NULL), 15 deleted; then nothing. */
async function mirrorProfilesCase(h: ReturnType<typeof harness>, kind: 'people' | 'groups', tracked = false) {
  const name = `mirror_${kind}${tracked ? '_tracked' : ''}`;
  const table = new Map<number, ReturnType<typeof profileRow>>();
  for (let i = 1; i <= 300; i++) table.set(i, profileRow(i));
  await h.src.createTable({ name, columns: PROFILE_COLUMNS });
  await h.src.insertRows(name, [...table.values()]);
  if (tracked) await h.src.enableChangeTracking!(name);
  const mapping = kind === 'people' ? { user_column_name: 'id' } : { group_key: 'company', group_id_column: 'id' };
  const { importId } = await createSourceAndImport(h.api, h.src.sourceBody(), {
    import_type: kind,
    table_params: { table: h.src.tableRef(name) },
    sync_mode: 'mirror',
    schedule: 'api_only',
    time_column_name: 'updated',
    ...mapping,
  });
  expect(changes(await syncOnce(h.api, importId))).toEqual([300, 0, 0]);

  const added = Array.from({ length: 20 }, (_, k) => profileRow(301 + k));
  await h.src.insertRows(name, added);
  for (const r of added) table.set(Number(r.id.slice(1)), r);
  // 10 gold rows lose their tier (a column now NULL); 20 rows get a new name with an OLDER time.
  await h.src.exec(`UPDATE ${name} SET tier = NULL WHERE updated BETWEEN ${T0 + 2} AND ${T0 + 20} AND tier IS NOT NULL`);
  for (let i = 2; i <= 20; i += 2) table.get(i)!.tier = null;
  await h.src.exec(`UPDATE ${name} SET name = 'renamed', updated = ${T0 - 5} WHERE updated BETWEEN ${T0 + 41} AND ${T0 + 60}`);
  for (let i = 41; i <= 60; i++) Object.assign(table.get(i)!, { name: 'renamed', updated: T0 - 5 });
  await h.src.exec(`DELETE FROM ${name} WHERE updated BETWEEN ${T0 + 101} AND ${T0 + 115}`);
  for (let i = 101; i <= 115; i++) table.delete(i);

  const second = await syncOnce(h.api, importId);
  expect(changes(second)).toEqual([20, 30, 15]);
  // With change tracking too the table is read whole: a profile is its key's latest row.
  expect(second.rows_read).toBe(305);
  if (tracked) expect(second.log.join('\n')).toContain(PROFILES_NEED_FULL_READ);
  const scope = kind === 'people' ? { projectId: h.api.projectId } : { projectId: h.api.projectId, groupKey: 'company' };
  expect(await countProfilesIn(h.t.db, scope)).toBe(table.size);
  const stored = await profilesAt(h.t.db, scope, 0, 1000);
  const got = Object.fromEntries(stored.map((s) => [s.id, { name: s.properties.name, tier: s.properties.tier }]));
  const want = Object.fromEntries([...table.values()].map((r) => [r.id, { name: r.name, tier: r.tier ?? undefined }]));
  expect(got).toEqual(want);

  expect(changes(await syncOnce(h.api, importId))).toEqual([0, 0, 0]);
}

// Every event store on plain Redis; the SQLite store on the Redis Cluster too (the flow of partitions on it).
const storeCases: [string, RedisKind][] = [...storeKindNames().map((k) => [k, 'redis'] as [string, RedisKind]), ...redisKinds().filter((r) => r === 'cluster').map((r) => ['sqlite', r] as [string, RedisKind])];

describe.each(storeCases)('mirror sync into a %s event store (SQLite source), Redis: %s', (storeKind, redisKind) => {
  const h = harness(storeKind, sqliteSourceFixture, { SYNC_PARTITION_ROWS: 4000, WAREHOUSE_BATCH_SIZE: 1500, ...redisOverrides(redisKind) });

  it('events: 10k rows, then exactly 70 inserted / 100 updated / 50 deleted, then 0 / 0 / 0; export equals the table', async () => {
    await mirrorEventsCase(h, 10_000, true);
  }, 180_000);

  it('people: new, changed (a column now NULL, an older row time) and vanished rows; then no change', async () => {
    await mirrorProfilesCase(h, 'people');
  }, 60_000);

  it('groups: the same under the group key', async () => {
    await mirrorProfilesCase(h, 'groups');
  }, 60_000);

  it('two mirror imports with the same insert ids, and an /import event with one, leave each other alone', async () => {
    const p = await seedProject(h.t.db);
    const api = { url: h.app.url, basic: p.basic, projectId: p.id };
    const rows = (shiftMs: number) => Array.from({ length: 20 }, (_, k) => ({ ...evRow(k + 1), ts: evRow(k + 1).ts + shiftMs }));
    const imports: number[] = [];
    for (const [name, shift] of [['shared_a', 0], ['shared_b', 500]] as const) {
      await h.src.createTable({ name, columns: EV_COLUMNS });
      await h.src.insertRows(name, rows(shift));
      imports.push((await createSourceAndImport(api, h.src.sourceBody(), mirrorEventsImport(h.src.tableRef(name)))).importId);
    }
    const [a, b] = imports as [number, number];
    const posted = await fetch(`${h.app.url}/import?project_id=${p.id}&strict=1`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/json' },
      body: JSON.stringify([{ event: 'manual', properties: { time: T0 / 1000 + 3, distinct_id: 'm', $insert_id: 'e-5' } }]),
    });
    expect(posted.status).toBe(200);
    expect(changes(await syncOnce(api, a))).toEqual([20, 0, 0]);
    expect(changes(await syncOnce(api, b))).toEqual([20, 0, 0]);
    expect(await exportedEvents(api, h.app.url)).toHaveLength(41);

    // Rows vanish from B and one changes: only B's events go or change.
    await h.src.exec(`DELETE FROM shared_b WHERE id <= 10`);
    await h.src.exec(`UPDATE shared_b SET plan = 'changed' WHERE id = 11`);
    expect(changes(await syncOnce(api, b))).toEqual([0, 1, 10]);
    expect(changes(await syncOnce(api, a))).toEqual([0, 0, 0]);
    const left = await exportedEvents(api, h.app.url);
    expect(left).toHaveLength(31);
    expect(left.filter((e) => e.insert_id === 'e-5').map((e) => e.event).sort()).toEqual(['ev0', 'manual']);
    expect(left.filter((e) => e.insert_id === 'e-11').map((e) => e.props.plan).sort()).toEqual(['changed', 'plan-3']);
  }, 60_000);

  it('DELETE …/imports/{id}?delete_data=true deletes its events too, so a re-created mirror stores the table afresh', async () => {
    const p = await seedProject(h.t.db);
    const api = { url: h.app.url, basic: p.basic, projectId: p.id };
    const posted = await fetch(`${h.app.url}/import?project_id=${p.id}&strict=1`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/json' },
      body: JSON.stringify([{ event: 'manual', properties: { time: T0 / 1000 + 3, distinct_id: 'm', $insert_id: 'e-1' } }]),
    });
    expect(posted.status).toBe(200);
    await h.src.createTable({ name: 'recreated', columns: EV_COLUMNS });
    await h.src.insertRows('recreated', [evRow(1), evRow(2), evRow(3)]);
    const first = await createSourceAndImport(api, h.src.sourceBody(), mirrorEventsImport(h.src.tableRef('recreated')));
    expect(changes(await syncOnce(api, first.importId))).toEqual([3, 0, 0]);

    const refused = await call(api, 'DELETE', `/imports/${first.importId}?delete_data=yes`);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/delete_data/);
    const deleted = await call(api, 'DELETE', `/imports/${first.importId}?delete_data=true`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.results).toEqual({ id: first.importId, deleted: true, events_deleted: 3 });
    expect((await exportedEvents(api, h.app.url)).map((e) => e.event)).toEqual(['manual']);

    const second = await call(api, 'POST', '/imports', { warehouse_source_id: first.sourceId, ...mirrorEventsImport(h.src.tableRef('recreated')) });
    const run = await syncOnce(api, second.body.results.id);
    expect([...changes(run), run.num_deduplicated]).toEqual([3, 0, 0, 0]);
    const after = byInsertId(await exportedEvents(api, h.app.url));
    expect(after.filter((e) => e.event !== 'manual')).toEqual([1, 2, 3].map((i) => expectedEvent(evRow(i))));
    expect(after.filter((e) => e.event === 'manual')).toHaveLength(1);
  }, 60_000);

  it('a row whose very event /import already stored is a duplicate: never taken over, changed or deleted by the mirror', async () => {
    const p = await seedProject(h.t.db);
    const api = { url: h.app.url, basic: p.basic, projectId: p.id };
    const [r1, r2] = [evRow(1), evRow(2)];
    // The same dedupe key as row 1 (event, distinct_id, time, $insert_id), other properties.
    const posted = await fetch(`${h.app.url}/import?project_id=${p.id}&strict=1`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/json' },
      body: JSON.stringify([{ event: r1.event, properties: { time: r1.ts, distinct_id: r1.user_id, $insert_id: r1.insert_id, src: 'api' } }]),
    });
    expect(posted.status).toBe(200);
    await h.src.createTable({ name: 'held', columns: EV_COLUMNS });
    await h.src.insertRows('held', [r1, r2]);
    const { sourceId, importId } = await createSourceAndImport(api, h.src.sourceBody(), mirrorEventsImport(h.src.tableRef('held')));
    const sourced = async () => byInsertId(await exportedEvents(api, h.app.url)).map((e) => [e.insert_id, e.props.src ?? e.props.plan ?? null]);

    const first = await syncOnce(api, importId);
    expect([...changes(first), first.num_deduplicated]).toEqual([1, 0, 0, 1]);
    expect(await sourced()).toEqual([['e-1', 'api'], ['e-2', 'plan-2']]);

    await h.src.exec(`UPDATE held SET plan = 'changed'`);
    const second = await syncOnce(api, importId);
    expect([...changes(second), second.num_deduplicated]).toEqual([0, 1, 0, 1]);
    expect(await sourced()).toEqual([['e-1', 'api'], ['e-2', 'changed']]);

    await h.src.exec(`DELETE FROM held`);
    const third = await syncOnce(api, importId);
    expect([...changes(third), third.num_deduplicated]).toEqual([0, 0, 1, 0]);
    expect(await sourced()).toEqual([['e-1', 'api']]);

    // Deleting the source takes its imports' snapshots with them (the snapshot has no foreign key).
    await h.src.insertRows('held', [r2]);
    expect(changes(await syncOnce(api, importId))).toEqual([1, 0, 0]);
    expect(await h.t.db('mirror_rows').where({ import_id: importId }).select('key')).toEqual([{ key: 'e-2' }]);
    expect((await call(api, 'DELETE', `/${sourceId}`)).status).toBe(200);
    expect(await h.t.db('mirror_rows').where({ import_id: importId }).select('key')).toEqual([]);
  }, 60_000);
});

const otherSources = [postgresSourceFixture, mysqlSourceFixture, redshiftSourceFixture, snowflakeSourceFixture, bigqueryFixtureWith(1000), databricksFixtureWith(1000)].filter((f) => f.available());

describe.each(otherSources.map((f) => [f.type, f] as const))('mirror sync from a %s source (snapshot diff)', (_type, fixture) => {
  const h = harness('sqlite', fixture);

  it('events: exactly 70 inserted / 100 updated / 50 deleted, then 0 / 0 / 0; export equals the table', async () => {
    await mirrorEventsCase(h, 1500, false);
  }, 180_000);
});

// Snowflake's CHANGES clause and Databricks' change data feed (table_changes), each through its stand-in.
describe.each([
  ['snowflake', snowflakeSourceFixture],
  ['databricks', databricksFixtureWith(1000)],
] as const)('mirror sync from %s with its change tracking', (_type, fixture) => {
  const h = harness('sqlite', fixture);

  it('reads only the changes, and ends exactly where the snapshot diff of the same changes does', async () => {
    const viaChanges = await mirrorEventsCase(h, 1500, false, { name: 'tracked_ev', tracked: true });
    // The same table and changes without change tracking, into a second project: the snapshot diff.
    const other = await seedProject(h.t.db);
    const viaDiff = await mirrorEventsCase(h, 1500, false, { api: { url: h.app.url, basic: other.basic, projectId: other.id }, name: 'plain_ev' });
    expect(byInsertId(viaChanges.exported)).toEqual(byInsertId(viaDiff.exported));
  }, 180_000);

  it('a table without change tracking is read whole (snapshot diff), and says why', async () => {
    await h.src.createTable({ name: 'untracked_ev', columns: EV_COLUMNS });
    await h.src.insertRows('untracked_ev', [evRow(1), evRow(2), evRow(3)]);
    // A project of its own: events e-1… of the other imports of this describe hold these rows' keys.
    const own = await seedProject(h.t.db);
    const api = { url: h.app.url, basic: own.basic, projectId: own.id };
    const { importId } = await createSourceAndImport(api, h.src.sourceBody('untracked'), mirrorEventsImport(h.src.tableRef('untracked_ev')));
    expect(changes(await syncOnce(api, importId))).toEqual([3, 0, 0]);
    await h.src.exec(`DELETE FROM untracked_ev WHERE id = 2`);
    const second = await syncOnce(api, importId);
    expect(changes(second)).toEqual([0, 0, 1]);
    expect(second.log.join('\n')).toMatch(/change tracking unavailable \(.*(Change tracking is not enabled|DELTA_MISSING_CHANGE_DATA).*\): reading the whole table \(snapshot diff\)/);
  });

  it('a row whose key changed deletes the old key and inserts the new one', async () => {
    await h.src.createTable({ name: 'rekeyed_ev', columns: EV_COLUMNS });
    await h.src.insertRows('rekeyed_ev', [evRow(1), evRow(2), evRow(3)]);
    await h.src.enableChangeTracking!('rekeyed_ev');
    // A project of its own: the other imports of this describe hold events e-1… too, which this
    // import's mirror leaves alone.
    const own = await seedProject(h.t.db);
    const api = { url: h.app.url, basic: own.basic, projectId: own.id };
    const { importId } = await createSourceAndImport(api, h.src.sourceBody('rekeyed'), mirrorEventsImport(h.src.tableRef('rekeyed_ev')));
    expect(changes(await syncOnce(api, importId))).toEqual([3, 0, 0]);
    await h.src.exec(`UPDATE rekeyed_ev SET insert_id = 'moved-2' WHERE id = 2`);
    await h.src.exec(`UPDATE rekeyed_ev SET plan = 'changed' WHERE id = 3`);
    const second = await syncOnce(api, importId);
    expect(changes(second)).toEqual([1, 1, 1]);
    expect(second.rows_read).toBe(3); // the keys changed: e-2 (gone), moved-2 (new), e-3 (changed)
    const ids = (await exportedEvents(api, h.app.url)).map((e) => e.insert_id).sort();
    expect(ids).toEqual(['e-1', 'e-3', 'moved-2']);
  });

  it('a changed row that is no longer valid deletes its event, as a vanished row does', async () => {
    await h.src.createTable({ name: 'invalid_ev', columns: EV_COLUMNS.map((c) => (c.name === 'ts' ? { ...c, notNull: false } : c)) });
    await h.src.insertRows('invalid_ev', [evRow(1), evRow(2), evRow(3)]);
    await h.src.enableChangeTracking!('invalid_ev');
    const own = await seedProject(h.t.db);
    const api = { url: h.app.url, basic: own.basic, projectId: own.id };
    const { importId } = await createSourceAndImport(api, h.src.sourceBody('invalid'), mirrorEventsImport(h.src.tableRef('invalid_ev')));
    expect(changes(await syncOnce(api, importId))).toEqual([3, 0, 0]);
    await h.src.exec(`UPDATE invalid_ev SET ts = NULL WHERE id = 2`);
    const second = await syncOnce(api, importId);
    expect(changes(second)).toEqual([0, 0, 1]);
    expect(second.log.join('\n')).toMatch(/rejected: ts: time column 'ts' is null/);
    expect((await exportedEvents(api, h.app.url)).map((e) => e.insert_id).sort()).toEqual(['e-1', 'e-3']);
    expect(changes(await syncOnce(api, importId))).toEqual([0, 0, 0]);
  });

  it('people: new, changed and deleted profiles, the table read whole although it tracks changes', async () => {
    await mirrorProfilesCase(h, 'people', true);
  });

  it("people with several rows per user follow each user's latest row when older rows come and go", async () => {
    await h.src.createTable({ name: 'people_history', columns: PROFILE_COLUMNS });
    await h.src.insertRows('people_history', [
      { id: 'p1', updated: T0 + 1, name: 'p1 old', tier: null },
      { id: 'p1', updated: T0 + 5, name: 'p1 latest', tier: 'pro' },
      { id: 'p2', updated: T0 + 3, name: 'p2 latest', tier: 'gold' },
      { id: 'p3', updated: T0 + 1, name: 'p3 latest', tier: null },
    ]);
    await h.src.enableChangeTracking!('people_history');
    const own = await seedProject(h.t.db);
    const api = { url: h.app.url, basic: own.basic, projectId: own.id };
    const { importId } = await createSourceAndImport(api, h.src.sourceBody('history'), {
      import_type: 'people',
      table_params: { table: h.src.tableRef('people_history') },
      sync_mode: 'mirror',
      schedule: 'api_only',
      time_column_name: 'updated',
      user_column_name: 'id',
    });
    expect(changes(await syncOnce(api, importId))).toEqual([3, 0, 0]);
    // p1 loses an old row and p2 gains an older one: neither user's latest row changed.
    await h.src.exec(`DELETE FROM people_history WHERE id = 'p1' AND updated = ${T0 + 1}`);
    await h.src.insertRows('people_history', [{ id: 'p2', updated: T0 + 1, name: 'p2 backfilled', tier: null }]);
    expect(changes(await syncOnce(api, importId))).toEqual([0, 0, 0]);
    const stored = await profilesAt(h.t.db, { projectId: own.id }, 0, 10);
    expect(Object.fromEntries(stored.map((s) => [s.id, s.properties.name]))).toEqual({ p1: 'p1 latest', p2: 'p2 latest', p3: 'p3 latest' });
  });
});

describe('mirror profiles: what a row stops setting', () => {
  const h = harness('sqlite', sqliteSourceFixture);

  it('a key gone from the JSON column and a dropped column are unset; properties other sources set stay', async () => {
    await h.src.createTable({
      name: 'traits_people',
      columns: [
        { name: 'id', type: 'text', notNull: true },
        { name: 'updated', type: 'integer', notNull: true },
        { name: 'traits', type: 'text' },
        { name: 'legacy', type: 'text' },
      ],
    });
    await h.src.insertRows('traits_people', [{ id: 'p1', updated: T0, traits: '{"a":1,"b":2}', legacy: 'L' }]);
    const { importId } = await createSourceAndImport(h.api, h.src.sourceBody('traits'), {
      import_type: 'people',
      table_params: { table: 'traits_people' },
      sync_mode: 'mirror',
      schedule: 'api_only',
      user_column_name: 'id',
      time_column_name: 'updated',
      json_properties_column_name: 'traits',
    });
    const props = async () => {
      const [p] = await profilesAt(h.t.db, { projectId: h.api.projectId }, 0, 10);
      const { $last_seen: _seen, ...rest } = p!.properties;
      return rest;
    };
    expect(changes(await syncOnce(h.api, importId))).toEqual([1, 0, 0]);
    const posted = await fetch(`${h.app.url}/engage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ $token: h.p.token, $distinct_id: 'p1', $set: { crm: 'x' } }]),
    });
    expect(posted.status).toBe(200);
    expect(await props()).toEqual({ a: 1, b: 2, legacy: 'L', crm: 'x' });

    await h.src.exec(`UPDATE traits_people SET traits = '{"a":1}'`);
    expect(changes(await syncOnce(h.api, importId))).toEqual([0, 1, 0]);
    expect(await props()).toEqual({ a: 1, legacy: 'L', crm: 'x' });

    await h.src.exec(`ALTER TABLE traits_people DROP COLUMN legacy`);
    expect(changes(await syncOnce(h.api, importId))).toEqual([0, 1, 0]);
    expect(await props()).toEqual({ a: 1, crm: 'x' });

    await h.src.exec(`UPDATE traits_people SET traits = NULL`);
    expect(changes(await syncOnce(h.api, importId))).toEqual([0, 1, 0]);
    expect(await props()).toEqual({ crm: 'x' });
    expect(changes(await syncOnce(h.api, importId))).toEqual([0, 0, 0]);
  });
});

describe('mirror imports: bad input', () => {
  const h = harness('sqlite', sqliteSourceFixture);
  const base = (extra: Record<string, unknown>) => ({ table_params: { table: 'bad_input' }, schedule: 'api_only', sync_mode: 'mirror', ...extra });

  it('refuses mirror without an insert-ID column, on a lookup table, and a mode switch of an existing import', async () => {
    await h.src.createTable({ name: 'bad_input', columns: EV_COLUMNS });
    const src = await call(h.api, 'POST', '', h.src.sourceBody());
    const sourceId = src.body.results.id;
    const create = (body: Record<string, unknown>) => call(h.api, 'POST', '/imports', { warehouse_source_id: sourceId, ...body });

    const noKey = await create(base({ import_type: 'events', event_column_name: 'event', time_column_name: 'ts' }));
    expect(noKey.status).toBe(400);
    expect(noKey.body.error).toMatch(/insert_id_column_name is required with sync_mode mirror/);

    const lt = await appCall(h.api, 'POST', '/lookup-tables', { name: 'plans' });
    const lookup = await create(base({ import_type: 'lookup_table', property_key_column_name: 'plan', lookup_table_id: lt.body.results.id }));
    expect(lookup.status).toBe(400);
    expect(lookup.body.error).toMatch(/lookup_table imports .*not mirror/);

    const ok = await create(base({ import_type: 'events', event_column_name: 'event', time_column_name: 'ts', insert_id_column_name: 'insert_id' }));
    expect(ok.status).toBe(200);
    const patch = await call(h.api, 'PATCH', `/imports/${ok.body.results.id}`, { sync_mode: 'full_sync' });
    expect(patch.status).toBe(400);
    expect(patch.body.error).toMatch(/unknown field 'sync_mode'.*a sync mode is fixed when the import is created/);
  });

  it('a row whose key repeats is rejected with its row number; the first row read is kept', async () => {
    await h.src.createTable({ name: 'dup_ev', columns: EV_COLUMNS });
    await h.src.insertRows('dup_ev', [evRow(1), evRow(2), { ...evRow(3), insert_id: 'e-2', event: 'other' }]);
    const { importId } = await createSourceAndImport(h.api, h.src.sourceBody('dups'), mirrorEventsImport('dup_ev'));
    const run = await syncOnce(h.api, importId);
    expect(changes(run)).toEqual([2, 0, 0]);
    expect(run.rows_skipped).toBe(1);
    expect(run.log.join('\n')).toMatch(/row \d rejected: \$insert_id: duplicate key 'e-2'/);
    expect(changes(await syncOnce(h.api, importId))).toEqual([0, 0, 0]);

    // Deleting the import forgets its snapshot (a new import of the table starts from scratch).
    expect(Number((await h.t.db('mirror_rows').where({ import_id: importId }).count({ n: '*' }).first())!.n)).toBe(2);
    expect((await call(h.api, 'DELETE', `/imports/${importId}`)).status).toBe(200);
    expect(Number((await h.t.db('mirror_rows').where({ import_id: importId }).count({ n: '*' }).first())!.n)).toBe(0);
  });

  it('a key whose first row is invalid is taken by its next valid row, wherever batches end', async () => {
    await h.src.createTable({ name: 'dup_invalid_ev', columns: EV_COLUMNS });
    const future = Date.now() + 10 * 86_400_000; // strict validation: more than an hour ahead
    await h.src.insertRows('dup_invalid_ev', [{ ...evRow(7), ts: future }, { ...evRow(7), plan: 'second' }, evRow(8)]);
    const { importId } = await createSourceAndImport(h.api, h.src.sourceBody('dup-invalid'), mirrorEventsImport('dup_invalid_ev'));
    const run = await syncOnce(h.api, importId);
    expect(changes(run)).toEqual([2, 0, 0]);
    expect(run.rows_skipped).toBe(1);
    expect(run.log.join('\n')).toMatch(/row 1 rejected: properties.time: .* in the future/);
    expect(run.log.join('\n')).not.toMatch(/duplicate key/);
    const stored = (await exportedEvents(h.api, h.app.url)).filter((e) => e.insert_id === 'e-7');
    expect(stored.map((e) => e.props.plan)).toEqual(['second']);
  });
});
