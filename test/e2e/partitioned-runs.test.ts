/**
 * A large sync across worker PROCESSES (CONTRACT "Large runs"): a 1M-row SQLite source table,
 * SYNC_PARTITION_ROWS=100000, three `worker` processes. The run is split into ≥ 8 partitions
 * that several workers take; one worker is killed with -9 mid-run; its partitions are taken
 * over after their lock lapses and resume from their own checkpoints; the run succeeds with
 * exactly 1M events stored once each, and the history names the workers. The store is SQLite
 * (one writer shared by three processes — the hardest case for contention); the partitioned
 * machinery on PostgreSQL is covered by test/integration/partitioned-sync.test.ts, which keeps
 * this suite's CI time to one 1M-row run per Redis kind. A partitioned batch import follows.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBatchImport } from '../../src/db/batch-imports.repo.js';
import { countEvents } from '../helpers/events.js';
import { listPartitions } from '../../src/db/run-partitions.repo.js';
import { seedProject } from '../helpers/accounts.js';
import { body, ndjsonEvents, until } from '../helpers/job-platform.js';
import { redisKinds, redisOverrides } from '../helpers/redis-kinds.js';
import { serviceEnv, spawnBin } from '../helpers/spawn.js';
import { EV_EVENTS_IMPORT, fillEventsTable, sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { createSourceAndImport, manualSync, waitForRun, type Api } from '../helpers/warehouse.js';
import { workerProcessesFixture } from '../helpers/worker-processes.js';

const ROWS = 1_000_000;
const PARTITION_ROWS = 100_000;

describe.each(redisKinds())('partitioned sync over three worker processes, Redis: %s', (redisKind) => {
  const f = workerProcessesFixture('sqlite', redisOverrides(redisKind));
  let src: WarehouseSourceHandle;

  beforeAll(async () => {
    src = await sqliteSourceFixture.create();
    f.sources.push(src);
    await fillEventsTable(src, ROWS);
  }, 120_000);

  it('≥ 8 partitions on several workers, one killed -9, exactly 1M events once each', async () => {
    const { t, app, procs } = f;
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    const { importId } = await createSourceAndImport(api, src.sourceBody(), EV_EVENTS_IMPORT);
    const env = serviceEnv(t.url, app.config, {
      SYNC_PARTITION_ROWS: String(PARTITION_ROWS),
      // A killed worker's partition is taken over once its lock lapses: keep that short for the test.
      JOB_LOCK_MS: '2000',
      RECONCILE_INTERVAL_SEC: '2',
      WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'warn',
    });
    for (let i = 0; i < 3; i++) procs.push(spawnBin('worker', env));
    const { run_id } = await manualSync(api, importId);

    // Wait until at least two workers hold partitions and some rows are in, then kill one that is mid-partition.
    const running = await until(
      async () => {
        const parts = await listPartitions(t.db, 'sync', run_id);
        const workers = new Set(parts.filter((x) => x.worker).map((x) => x.worker));
        const read = Number((await t.db('sync_runs').where({ id: run_id }).first()).rows_read);
        const busy = parts.filter((x) => x.status === 'running' && (x.counts.rowsRead ?? 0) > 0);
        return workers.size >= 2 && read >= 150_000 && busy.length > 0 ? busy : undefined;
      },
      180_000,
      100,
    );
    const victimPid = Number(running[0]!.worker!.split(':').pop());
    const victim = procs.find((x) => x.child.pid === victimPid);
    expect(victim, `worker ${running[0]!.worker} is one of ours`).toBeDefined();
    victim!.child.kill('SIGKILL');
    await victim!.exited;
    const atKill = await t.db('sync_runs').where({ id: run_id }).first();
    expect(atKill.status).toBe('RUNNING');
    expect(Number(atKill.rows_read)).toBeLessThan(ROWS);
    // Each committed batch carried its events and its counts together. The two surviving workers
    // keep committing between the two reads, so the events can only be ahead of the snapshot.
    const eventsAfterKill = await countEvents(t.db, p.id);
    expect(eventsAfterKill).toBeGreaterThanOrEqual(Number(atKill.rows_read));
    expect(eventsAfterKill).toBeLessThanOrEqual(ROWS);

    const done = await waitForRun(api, importId, run_id, 300_000);
    expect(done).toMatchObject({ status: 'SUCCEEDED', rows_read: ROWS, num_events_imported: ROWS, num_deduplicated: 0, rows_skipped: 0, error: null });
    expect(done.partitions.total).toBeGreaterThanOrEqual(8);
    expect(done.partitions.done).toBe(done.partitions.total);
    expect(done.workers.length).toBeGreaterThanOrEqual(2);
    for (const w of done.workers) expect(w).toMatch(/^.+:\d+$/);
    const parts = await listPartitions(t.db, 'sync', run_id);
    // The killed worker's partition was taken over (a second lease) and re-read its range from its first row.
    const taken = parts.find((x) => x.idx === running[0]!.idx)!;
    expect(taken.attempts).toBeGreaterThanOrEqual(2);
    expect(taken.worker).not.toBe(running[0]!.worker);
    expect(done.log.join('\n')).toMatch(new RegExp(`partition ${taken.idx + 1} of ${parts.length} .*re-reading its range from the first row`));
    expect(await countEvents(t.db, p.id)).toBe(ROWS);
    const dup = await t.db('events').where({ project_id: p.id }).groupBy('insert_id').havingRaw('COUNT(*) > 1').count({ n: '*' });
    expect(dup).toEqual([]);
  }, 420_000);
});

/**
 * The same for a batch import: an uncompressed 200k-record NDJSON upload, SYNC_PARTITION_ROWS =
 * 25000 (8 byte ranges), three worker processes, one killed with -9 mid-run. 200k rather than 1M
 * keeps the upload and the suite's CI time modest; the machinery is the sync's.
 */
describe.each(redisKinds())('partitioned batch import over three worker processes, Redis: %s', (redisKind) => {
  const N = 200_000;
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'part-e2e-uploads-'));
  const f = workerProcessesFixture('sqlite', { ...redisOverrides(redisKind), UPLOAD_DIR: uploads });
  // The workers reading it are killed after the test, before any afterAll.
  afterAll(() => fs.rmSync(uploads, { recursive: true, force: true }));

  it('≥ 8 byte ranges on several workers, one killed -9, exactly N events once each', async () => {
    const { t, app, procs } = f;
    const env = serviceEnv(t.url, app.config, {
      UPLOAD_DIR: uploads,
      SYNC_PARTITION_ROWS: String(N / 8),
      JOB_LOCK_MS: '2000',
      RECONCILE_INTERVAL_SEC: '2',
      WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'info',
    });
    for (let i = 0; i < 3; i++) procs.push(spawnBin('worker', env));
    await Promise.all(procs.map((p) => p.waitFor(/"msg":"worker started"/, 60_000)));
    const p = await seedProject(t.db);
    const res = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?type=events`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/x-ndjson' },
      body: body(ndjsonEvents(N)),
    });
    expect(res.status).toBe(202);
    const id = ((await res.json()) as { results: { id: string } }).results.id;

    const running = await until(
      async () => {
        const parts = await listPartitions<unknown, { done: number }>(t.db, 'batch-import', id);
        const workers = new Set(parts.filter((x) => x.worker).map((x) => x.worker));
        const busy = parts.filter((x) => x.status === 'running' && x.checkpoint.done > 0);
        return workers.size >= 2 && busy.length > 0 ? busy : undefined;
      },
      180_000,
      50,
    );
    const victim = procs.find((x) => x.child.pid === Number(running[0]!.worker!.split(':').pop()));
    expect(victim).toBeDefined();
    victim!.child.kill('SIGKILL');
    await victim!.exited;
    const atKill = (await findBatchImport(t.db, id))!;
    expect(atKill.status).toBe('running');
    // Surviving workers commit between the two reads: the events can only be ahead of the snapshot.
    expect(await countEvents(t.db, p.id)).toBeGreaterThanOrEqual(atKill.recordsDone);

    const done = await until(async () => {
      const r = await findBatchImport(t.db, id);
      return r && (r.status === 'succeeded' || r.status === 'failed') ? r : undefined;
    }, 300_000, 200);
    expect(done).toMatchObject({ status: 'succeeded', recordsDone: N, imported: N, deduplicated: 0, rejected: 0 });
    const view = (await (await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports/${id}`, { headers: { authorization: p.basic } })).json()) as { results: any };
    expect(view.results.partitions.total).toBeGreaterThanOrEqual(8);
    expect(view.results.partitions.done).toBe(view.results.partitions.total);
    expect(view.results.workers.length).toBeGreaterThanOrEqual(2);
    const taken = (await listPartitions(t.db, 'batch-import', id)).find((x) => x.idx === running[0]!.idx)!;
    expect(taken.attempts).toBeGreaterThanOrEqual(2);
    expect(done.log.join('\n')).toMatch(new RegExp(`partition ${taken.idx + 1} of \\d+ .*resuming after record \\d+`));
    expect(await countEvents(t.db, p.id)).toBe(N);
  }, 420_000);
});
