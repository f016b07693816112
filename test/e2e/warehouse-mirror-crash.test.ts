/**
 * A worker PROCESS killed with -9 in the middle of a mirror run: the batches committed before the
 * kill hold their events, snapshot entries and counts together; a restarted worker resumes after
 * the last of them, sweeps the vanished rows, and the project ends equal to the table with the
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

const ROWS = 200_000;

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
    const { importId } = await createSourceAndImport(api, src.sourceBody(), {
      import_type: 'events',
      table_params: { table: 'ev' },
      sync_mode: 'mirror',
      schedule: 'api_only',
      event_column_name: 'event',
      time_column_name: 'ts',
      user_column_name: 'user_id',
      insert_id_column_name: 'id',
    });
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
    await src.exec(`UPDATE ev SET url = 'changed' WHERE id BETWEEN 50000 AND 50999`);
    await src.exec(`DELETE FROM ev WHERE id BETWEEN 150000 AND 150999`);
    await src.exec(`INSERT INTO ev SELECT id + ${ROWS}, event, ts, user_id, url FROM ev WHERE id < 500`);

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

    // The project equals the table: every id once, the changed rows changed, the deleted ones gone.
    const seen = new Map<string, unknown>();
    for await (const page of eventStoreOf(t.db).scan({ projectId: p.id, fromMs: 0, toMs: Date.UTC(2030, 0, 1), pageSize: 10_000 })) {
      for (const e of page) {
        expect(seen.has(e.insertId)).toBe(false);
        seen.set(e.insertId, e.properties.url);
      }
    }
    expect(seen.size).toBe(ROWS - 500);
    expect([...seen.values()].filter((u) => u === 'changed').length).toBe(1000);
    expect(seen.has('150500')).toBe(false);
    expect(seen.has(String(ROWS + 499))).toBe(true);
    await second.kill('SIGTERM');
  }, 300_000);
});
