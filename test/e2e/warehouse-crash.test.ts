/**
 * A worker PROCESS killed with -9 in the middle of a 500k-row sync: the run stays in SQL with the
 * checkpoint of its last committed batch, a restarted worker takes the stalled job over, resumes
 * after that batch, and the project ends with exactly 500k events — nothing lost, nothing doubled.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents } from '../../src/db/events.repo.js';
import { seedProject } from '../helpers/accounts.js';
import { startTestApp, TEST_SECRETS_KEY, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { until } from '../helpers/job-platform.js';
import { spawnBin, type Spawned } from '../helpers/spawn.js';
import { sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { createSourceAndImport, manualSync, waitForRun, type Api } from '../helpers/warehouse.js';

const ROWS = 500_000;

describe.each(dbKinds())('worker killed mid-sync, store on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let src: WarehouseSourceHandle;
  const procs: Spawned[] = [];

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db);
    src = await sqliteSourceFixture.create();
    await src.createTable({
      name: 'ev',
      columns: [
        { name: 'id', type: 'integer', notNull: true },
        { name: 'event', type: 'text', notNull: true },
        { name: 'ts', type: 'integer', notNull: true },
        { name: 'user_id', type: 'text' },
        { name: 'url', type: 'text' },
      ],
    });
    // 500k rows in one statement (a recursive CTE), so the setup is seconds, not minutes.
    const file = src.sourceBody().config.path as string;
    const raw = new Database(file);
    raw.exec(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS - 1})
      INSERT INTO ev SELECT i, 'event_' || (i % 7), 1704067200000 + i * 1000, 'user-' || (i % 5000), '/p/' || (i % 97) FROM c`);
    raw.close();
  }, 120_000);
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await app?.queues.queues['warehouse-sync'].obliterate({ force: true });
    await app?.close();
    await src?.cleanup();
    await t?.destroy();
  });

  it('resumes after kill -9 and stores exactly 500k events', async () => {
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    const { importId } = await createSourceAndImport(api, src.sourceBody(), {
      import_type: 'events',
      table_params: { table: 'ev' },
      sync_mode: 'full_sync',
      schedule: 'api_only',
      event_column_name: 'event',
      time_column_name: 'ts',
      user_column_name: 'user_id',
    });
    const env = {
      DATABASE_URL: t.url,
      REDIS_URL: app.config.REDIS_URL,
      QUEUE_PREFIX: app.config.QUEUE_PREFIX,
      SECRETS_KEY: TEST_SECRETS_KEY,
      // A killed worker's job is taken over once its lock lapses: keep that short for the test.
      JOB_LOCK_MS: '2000',
      RECONCILE_INTERVAL_SEC: '2',
      WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'warn',
    };
    const { run_id } = await manualSync(api, importId);
    const first = spawnBin('worker', env);
    procs.push(first);

    const rowsRead = async () => Number((await t.db('sync_runs').where({ id: run_id }).first()).rows_read);
    await until(async () => (await rowsRead()) >= 100_000, 120_000, 100);
    first.child.kill('SIGKILL');
    await first.exited;

    const run = await t.db('sync_runs').where({ id: run_id }).first();
    const committed = Number(run.rows_read);
    expect(run.status).toBe('RUNNING');
    expect(committed).toBeGreaterThanOrEqual(100_000);
    expect(committed).toBeLessThan(ROWS);
    // The checkpoint and the events were committed together: nothing beyond the checkpoint is stored.
    expect(await countEvents(t.db, p.id)).toBe(committed);

    const second = spawnBin('worker', env);
    procs.push(second);
    const done = await waitForRun(api, importId, run_id, 120_000);
    expect(done).toMatchObject({ status: 'SUCCEEDED', rows_read: ROWS, num_events_imported: ROWS, rows_skipped: 0, error: null });
    expect(done.attempts).toBeGreaterThanOrEqual(2);
    expect(done.log.join('\n')).toMatch(new RegExp(`resuming after row ${committed}`));
    expect(await countEvents(t.db, p.id)).toBe(ROWS);
    await second.kill('SIGTERM');
  }, 240_000);
});
