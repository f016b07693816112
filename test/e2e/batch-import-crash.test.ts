/**
 * Crash safety of batch imports with real worker processes (`tsx src/bin/worker.ts`):
 *
 * - `kill -9` in the middle of a large import; a new worker finishes it with exactly N events
 *   stored, N counted as imported and 0 as duplicates (no chunk was applied twice, none lost).
 *   Size: 200k records on SQLite; 50k on Postgres, to keep the suite's run time modest on a
 *   2-core machine (the code path is the same; the SQLite run is the 200k proof).
 * - SIGTERM mid-job: the handler checkpoints, the process exits 0 within SHUTDOWN_TIMEOUT_MS,
 *   the run is back to `queued` with its job waiting (no attempt used), and a later worker
 *   completes it exactly.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findBatchImport, type BatchImport } from '../../src/db/batch-imports.repo.js';
import { countEvents } from '../helpers/events.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { crossKinds, redisOverrides } from '../helpers/redis-kinds.js';
import { body, gzip, ndjsonEvents, until } from '../helpers/job-platform.js';
import { serviceEnv, startWorkerProcess, terminate, type Spawned } from '../helpers/spawn.js';
import { BATCH_CHUNK_RECORDS } from '../../src/ingest/batch-import.chunk.js';

const SIZES = { sqlite: { kill: 200_000, term: 40_000 }, postgres: { kill: 50_000, term: 30_000 } } as const;
const SHUTDOWN_TIMEOUT_MS = 10_000;

describe.each(crossKinds(dbKinds()))('batch import crash safety on %s, queues on %s', (kind, redisKind) => {
  let t: TestDb;
  let app: TestApp;
  let project: SeededProject;
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'crash-uploads-'));
  const running: Spawned[] = [];

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { ...redisOverrides(redisKind), UPLOAD_DIR: uploads });
  });
  // No worker outlives its test: the next test's job must go to the next test's worker.
  afterEach(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill('SIGKILL')));
  });
  afterAll(async () => {
    for (const q of Object.values(app.queues.queues)) await q.obliterate({ force: true });
    await app.close();
    await t.destroy();
    fs.rmSync(uploads, { recursive: true, force: true });
  });

  const startWorker = (env: Record<string, string> = {}) =>
    startWorkerProcess(
      serviceEnv(t.url, app.config, {
        LOG_LEVEL: 'info',
        WORKER_CONCURRENCY: '1',
        // A killed worker's job is picked up again after about this long.
        JOB_LOCK_MS: '2000',
        RECONCILE_INTERVAL_SEC: '2',
        SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
        ...env,
      }),
      running,
    );

  async function upload(n: number): Promise<string> {
    project = await seedProject(t.db);
    const res = await fetch(`${app.url}/api/app/projects/${project.id}/batch-imports?type=events`, {
      method: 'POST',
      headers: { authorization: project.basic, 'content-type': 'application/x-ndjson' },
      body: body(gzip(ndjsonEvents(n))),
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { results: { id: string } }).results.id;
  }

  const runOf = async (id: string) => (await findBatchImport(t.db, id))!;
  const finished = (id: string, timeoutMs: number) =>
    until(async () => {
      const run = await runOf(id);
      return run.status === 'succeeded' || run.status === 'failed' ? run : undefined;
    }, timeoutMs, 200);

  function expectExact(run: BatchImport, n: number) {
    expect(run).toMatchObject({ status: 'succeeded', recordsDone: n, imported: n, deduplicated: 0, rejected: 0 });
  }

  it('survives kill -9 in the middle of the import: exactly N events, nothing doubled', async () => {
    const n = SIZES[kind].kill;
    const first = await startWorker();
    const id = await upload(n);
    // Let it get well into the file, then kill it without warning.
    await until(async () => (await runOf(id)).recordsDone >= n / 5, 120_000, 50);
    first.child.kill('SIGKILL');
    await first.exited;
    const atKill = await runOf(id);
    expect(atKill.status).toBe('running');
    expect(atKill.recordsDone).toBeLessThan(n);
    // Only whole chunks were committed, and every committed chunk is in the events table.
    expect(atKill.recordsDone % BATCH_CHUNK_RECORDS).toBe(0);
    expect(await countEvents(t.db, project.id)).toBe(atKill.recordsDone);

    const second = await startWorker();
    const run = await finished(id, 180_000);
    expectExact(run, n);
    expect(run.attempts).toBeGreaterThanOrEqual(2);
    expect(run.log.join('\n')).toMatch(new RegExp(`resuming at record \\d+ of ${n}`));
    expect(await countEvents(t.db, project.id)).toBe(n);
    // The view names both workers that ran a part of it: the killed one and the one that finished.
    const view = (await (await fetch(`${app.url}/api/app/projects/${project.id}/batch-imports/${id}`, { headers: { authorization: project.basic } })).json()) as { results: { workers: string[] } };
    expect(view.results.workers).toEqual([`${os.hostname()}:${first.child.pid}`, `${os.hostname()}:${second.child.pid}`].sort());
  });

  it('checkpoints and exits 0 on SIGTERM, then resumes in a later worker', async () => {
    const n = SIZES[kind].term;
    // A lock that outlives a slow chunk: on a loaded machine a 2 s lock can lapse while SQLite
    // writes a chunk on the worker's thread, and a job whose lock lapsed cannot be handed back
    // (the stall check recovers it instead), which is not what this test is about.
    const worker = await startWorker({ JOB_LOCK_MS: '15000' });
    const id = await upload(n);
    await until(async () => (await runOf(id)).recordsDone >= 4000, 60_000, 20);
    const { code, ms } = await terminate(worker);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(worker.output()).toMatch(/interrupted at record \d+/);

    const paused = await runOf(id);
    expect(paused.status).toBe('queued');
    expect(paused.recordsDone).toBeGreaterThan(0);
    expect(paused.recordsDone).toBeLessThan(n);
    expect(await countEvents(t.db, project.id)).toBe(paused.recordsDone);
    const job = await app.queues.getJob('batch-import', paused.jobId);
    // Handed back to `wait`, not left `active` for a later stall check: the runtime closes its
    // BullMQ workers before the handler hands the job back, so nothing fetches it again.
    expect(await job!.getState(), worker.output()).toBe('waiting');
    expect(job!.attemptsMade).toBe(0);

    await startWorker();
    const run = await finished(id, 120_000);
    expectExact(run, n);
    expect(run.log.join('\n')).toMatch(/interrupted at record/);
    expect(await countEvents(t.db, project.id)).toBe(n);
  });
});
