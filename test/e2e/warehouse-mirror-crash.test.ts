/**
 * A worker PROCESS killed with -9 in the middle of a mirror run: the batches committed before the
 * kill hold their events, snapshot entries and counts together; a restarted worker re-reads from
 * the first row, sweeps the vanished rows, and the project ends equal to the table with the
 * changes counted exactly once — nothing lost, nothing doubled. SQLite source; event stores
 * SQLite, PostgreSQL and (where CI provides one) ClickHouse — there the event writes land before
 * the batch's SQL commit, and a replay after the kill must still converge.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { ClickHouseEventStore } from '../../src/store/clickhouse/clickhouse-event.store.js';
import { clickhouseKinds, createTestClickHouse } from '../helpers/clickhouse.js';
import { attachEventStore, eventStoreOf } from '../helpers/events.js';
import { until } from '../helpers/job-platform.js';
import { serviceEnv, spawnBin, type Spawned } from '../helpers/spawn.js';
import { fillEventsTable, sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { createSourceAndImport, manualSync, waitForRun, type Api } from '../helpers/warehouse.js';
import { changeEvTable, differencesFromEvTable, EV_MIRROR_IMPORT, NO_DIFFERENCES } from '../helpers/mirror-table.js';

const ROWS = 200_000;
/** 1000 rows changed early in the read, 1000 deleted late. */
const AT = { updated: 50000, deleted: 150000 };

const kinds: ('sqlite' | 'postgres' | 'clickhouse')[] = [...dbKinds(), ...clickhouseKinds().filter((k) => k === 'clickhouse')];

describe.each(kinds)('worker killed mid mirror run, store on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let src: WarehouseSourceHandle;
  /** The event store's settings a spawned worker needs (ClickHouse); the SQL stores need none. */
  let storeEnv: Record<string, string> = {};
  let closeStore = async () => {};
  const procs: Spawned[] = [];

  beforeAll(async () => {
    if (kind === 'clickhouse') {
      t = await createTestDb('sqlite');
      const ch = await createTestClickHouse('clickhouse');
      const store = new ClickHouseEventStore(ch.config);
      attachEventStore(t.db, store);
      storeEnv = { ...ch.config } as Record<string, string>;
      closeStore = async () => {
        await store.close();
        await ch.destroy();
      };
    } else t = await createTestDb(kind);
    app = await startTestApp(t.db);
    src = await sqliteSourceFixture.create();
    await fillEventsTable(src, ROWS);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await app?.queues.queues['warehouse-sync'].obliterate({ force: true });
    await app?.close();
    await src?.cleanup();
    await closeStore();
    await t?.destroy();
  });

  it('resumes after kill -9: exactly 500 inserted / 1000 updated / 1000 deleted, and the project equals the table', async () => {
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    const { importId } = await createSourceAndImport(api, src.sourceBody(), EV_MIRROR_IMPORT);
    const env = serviceEnv(t.url, app.config, { ...storeEnv, JOB_LOCK_MS: '2000', SYNC_PARTITION_ROWS: String(ROWS * 2), RECONCILE_INTERVAL_SEC: '2', WORKER_CONCURRENCY: '1', LOG_LEVEL: 'warn' });
    const worker = () => {
      const w = spawnBin('worker', env);
      procs.push(w);
      return w;
    };

    const first = worker();
    const baseline = await manualSync(api, importId);
    expect(await waitForRun(api, importId, baseline.run_id, 120_000)).toMatchObject({ status: 'SUCCEEDED', num_events_imported: ROWS });

    // In the warehouse: 1000 rows changed early in the read, 1000 deleted late, 500 added at the end.
    await changeEvTable(src, ROWS, AT);

    const { run_id } = await manualSync(api, importId);
    const rowsRead = async () => Number((await t.db('sync_runs').where({ id: run_id }).first()).rows_read);
    await until(async () => (await rowsRead()) >= 60_000, 120_000, 50);
    first.child.kill('SIGKILL');
    await first.exited;
    const killed = await t.db('sync_runs').where({ id: run_id }).first();
    expect(killed.status).toBe('RUNNING');
    expect(Number(killed.rows_read)).toBeLessThan(ROWS - 500);

    const second = worker();
    const done = await waitForRun(api, importId, run_id, 120_000);
    expect(done).toMatchObject({ status: 'SUCCEEDED', rows_read: ROWS - 500, num_events_imported: 500, num_events_updated: 1000, num_events_deleted: 1000, rows_skipped: 0 });
    expect(done.attempts).toBeGreaterThanOrEqual(2);

    // The project equals the table: every id once, the changed rows changed, the deleted ones gone, the added ones there.
    expect(await differencesFromEvTable(eventStoreOf(t.db), p.id, ROWS, AT)).toEqual(NO_DIFFERENCES);
    await second.kill('SIGTERM');
  }, 300_000);
});
