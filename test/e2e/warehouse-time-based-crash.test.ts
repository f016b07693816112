/**
 * A worker PROCESS killed with -9 in the middle of an incremental (time_based) run: the run reads
 * only the rows inserted after the import's watermark, the batches committed before the kill
 * hold their events and checkpoint together, more rows reach the warehouse while no worker runs,
 * and a fresh worker re-reads from the first row (the committed rows found again, not counted
 * as duplicates) and reads the new rows too. The
 * watermark moves once, when the run succeeds; a follow-up run reads only what arrived after it.
 * In the end the project holds every row of the table exactly once — nothing lost, nothing
 * doubled. SQLite source; SQLite and PostgreSQL stores.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { seedProject } from '../helpers/accounts.js';
import { dbKinds } from '../helpers/db.js';
import { countEvents, eventStoreOf } from '../helpers/events.js';
import { until } from '../helpers/job-platform.js';
import { serviceEnv, spawnBin } from '../helpers/spawn.js';
import { appendEvRows, createTimeBasedTable, EV_TIME_BASED_IMPORT, insertTimeOf, storedEvRows, watermarkOf } from '../helpers/time-based-table.js';
import { sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { createSourceAndImport, manualSync, syncAndWait, waitForRun, type Api } from '../helpers/warehouse.js';
import { workerProcessesFixture } from '../helpers/worker-processes.js';

/** Rows of the first run, of the run that is killed, arriving while no worker runs, and after that run. */
const BASE = 2000;
const BIG = 60_000;
const LATE = 3000;
const AFTER = 1000;
const TOTAL = BASE + BIG + LATE + AFTER;

describe.each(dbKinds())('worker killed mid time_based run, store on %s', (kind) => {
  const f = workerProcessesFixture(kind);
  let src: WarehouseSourceHandle;

  beforeAll(async () => {
    src = await sqliteSourceFixture.create();
    f.sources.push(src);
    await createTimeBasedTable(src);
  });

  it(`resumes after kill -9, reads the rows that arrived meanwhile, and the project holds all ${TOTAL} rows once`, async () => {
    const { t, app, procs } = f;
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    await appendEvRows(src, 0, BASE);
    const { importId } = await createSourceAndImport(api, src.sourceBody(), EV_TIME_BASED_IMPORT);
    const env = serviceEnv(t.url, app.config, {
      // A killed worker's job is taken over once its lock lapses: keep that short for the test.
      JOB_LOCK_MS: '2000',
      // One unpartitioned run resuming from its own checkpoint; batches small enough to stop it well inside.
      SYNC_PARTITION_ROWS: String(BIG * 2),
      WAREHOUSE_BATCH_SIZE: '5000',
      RECONCILE_INTERVAL_SEC: '2',
      WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'warn',
    });
    const worker = () => {
      const w = spawnBin('worker', env);
      procs.push(w);
      return w;
    };

    const first = worker();
    const baseline = await syncAndWait(api, importId, 60_000);
    expect(baseline).toMatchObject({ status: 'SUCCEEDED', rows_read: BASE, num_events_imported: BASE, num_deduplicated: 0 });
    expect(await watermarkOf(api, importId)).toBe(insertTimeOf(BASE - 1));

    // The warehouse receives BIG rows; the next run reads only those, and its worker dies a third of the way in.
    await appendEvRows(src, BASE, BIG);
    const { run_id } = await manualSync(api, importId);
    const rowsRead = async () => Number((await t.db('sync_runs').where({ id: run_id }).first()).rows_read);
    await until(async () => (await rowsRead()) >= BIG / 3, 60_000, 20);
    first.child.kill('SIGKILL');
    await first.exited;

    const killed = await t.db('sync_runs').where({ id: run_id }).first();
    const committed = Number(killed.rows_read);
    expect(killed.status).toBe('RUNNING');
    expect(committed).toBeLessThan(BIG);
    // The checkpoint and the events were committed together: nothing beyond the checkpoint is stored
    // (its first row read is the one at the watermark, stored already).
    expect(await countEvents(t.db, p.id)).toBe(BASE + committed - 1);
    // The watermark has not moved: a run that has not succeeded leaves it alone.
    expect(await watermarkOf(api, importId)).toBe(insertTimeOf(BASE - 1));

    // More rows arrive while no worker runs: the resumed read finds them after the rows already read.
    await appendEvRows(src, BASE + BIG, LATE);
    const second = worker();
    const done = await waitForRun(api, importId, run_id, 60_000);
    expect(done).toMatchObject({ status: 'SUCCEEDED', rows_read: BIG + LATE + 1, num_events_imported: BIG + LATE, num_deduplicated: 1, rows_skipped: 0, error: null });
    expect(done.attempts).toBeGreaterThanOrEqual(2);
    const log = done.log.join('\n');
    expect(log).toMatch(`where inserted_at >= ${insertTimeOf(BASE - 1)}`);
    expect(log).toMatch(/attempt \d+ \(job [^)]*\): re-reading from the first row/);
    expect(await watermarkOf(api, importId)).toBe(insertTimeOf(BASE + BIG + LATE - 1));

    // A follow-up run imports only what arrived since (reading the row at the watermark again); one more finds nothing new.
    await appendEvRows(src, BASE + BIG + LATE, AFTER);
    expect(await syncAndWait(api, importId, 60_000)).toMatchObject({ status: 'SUCCEEDED', rows_read: AFTER + 1, num_events_imported: AFTER, num_deduplicated: 1 });
    expect(await syncAndWait(api, importId, 60_000)).toMatchObject({ status: 'SUCCEEDED', rows_read: 1, num_events_imported: 0, num_deduplicated: 1 });

    // Every row of the table once: no id missing, none stored twice (storedEvRows throws on a second copy).
    const { stored, missing } = await storedEvRows(eventStoreOf(t.db), p.id, TOTAL);
    expect(missing).toEqual([]);
    expect(stored).toBe(TOTAL);
    await second.kill('SIGTERM');
  }, 180_000);
});
