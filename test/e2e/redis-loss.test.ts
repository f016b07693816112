/**
 * Redis loses everything in the middle of a batch import (every key of the queue prefix is
 * deleted — the job, its lock, the queue's sets): the running handler loses its lock and stops,
 * the reconciler finds the run unfinished in SQL and its job gone, re-enqueues it under the same
 * id, and the run completes with exactly N events, none counted twice.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileSources } from '../../jobs/reconcile-sources.js';
import { findBatchImport } from '../../src/db/batch-imports.repo.js';
import { countEvents } from '../helpers/events.js';
import { silentLogger } from '../../src/lib/logger.js';
import { Reconciler } from '../../src/runs/reconciler.js';
import { seedProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { crossKinds, redisOverrides } from '../helpers/redis-kinds.js';
import { body, deleteKeysUnder, gzip, keysUnder, ndjsonEvents, startInProcessWorker, until, type InProcessWorker } from '../helpers/job-platform.js';

// Enough that the run is still going well after the loss: the handler learns of it only at its
// next lock renewal (every JOB_LOCK_MS / 2), and a fast machine imports ~100k events a second —
// with 60k the run could finish first, in one attempt, and never exercise the reconciler.
const N = { sqlite: 180_000, postgres: 120_000 } as const;

describe.each(crossKinds(dbKinds()))('Redis loss mid-run on %s, queues on %s', (kind, redisKind) => {
  let t: TestDb;
  let app: TestApp;
  let worker: InProcessWorker;
  let reconciler: Reconciler;
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'loss-uploads-'));

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { ...redisOverrides(redisKind), UPLOAD_DIR: uploads, JOB_LOCK_MS: 1000 });
    worker = await startInProcessWorker(t.db, app.config);
    reconciler = new Reconciler({ db: t.db, queues: worker.queues, log: silentLogger, sources: reconcileSources, intervalMs: 500 });
  });
  afterAll(async () => {
    await reconciler.stop();
    await worker.close();
    await app.queues.queues['batch-import'].obliterate({ force: true });
    await app.close();
    await t.destroy();
    fs.rmSync(uploads, { recursive: true, force: true });
  });

  it('the reconciler restores the run and the result is exact', async () => {
    const n = N[kind];
    const p = await seedProject(t.db);
    const res = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?type=events`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/x-ndjson' },
      body: body(gzip(ndjsonEvents(n))),
    });
    const { results } = (await res.json()) as { results: { id: string; job_id: string } };
    reconciler.start();
    await until(async () => (await findBatchImport(t.db, results.id))!.recordsDone >= 8000, 60_000, 20);

    const deleted = await deleteKeysUnder(app.queues.redis);
    expect(deleted).toBeGreaterThan(0);
    const before = (await findBatchImport(t.db, results.id))!;
    expect(before.recordsDone).toBeLessThan(n);

    const run = await until(async () => {
      const r = (await findBatchImport(t.db, results.id))!;
      return r.status === 'succeeded' || r.status === 'failed' ? r : undefined;
    }, 120_000, 100);
    expect(run).toMatchObject({ status: 'succeeded', recordsDone: n, imported: n, deduplicated: 0, rejected: 0 });
    expect(await countEvents(t.db, p.id)).toBe(n);
    expect(run.attempts).toBeGreaterThanOrEqual(2);
    // The job is back in Redis under its deterministic id.
    expect(await keysUnder(app.queues.redis)).toContain(`${app.queues.prefix}:batch-import:${results.job_id}`);
  });
});
