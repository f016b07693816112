/**
 * A worker PROCESS sent SIGTERM (a deploy, a scale-down) in the middle of an Amplitude migration
 * — in the load pass, while it loads several days at once, or in finalize, while it sets the
 * users' profiles page by page: it stops the way the service does — each job in flight commits
 * what it was committing and stops at its checkpoint (a day's read position, the profile cursor),
 * its job goes back to `wait` without using an attempt — and exits 0 within SHUTDOWN_TIMEOUT_MS,
 * with the project holding exactly what the committed checkpoints say. A fresh worker process
 * resumes from there and finishes the migration: every source event stored exactly once (exact
 * counts, each insert id once), read once, none counted as a duplicate, and every profile set
 * once and right. SQLite and PostgreSQL stores (the kill -9 of a migration's worker:
 * migration.test.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findMigration } from '../../src/db/migration-runs.repo.js';
import { countProfiles, findProfile } from '../../src/db/profiles.repo.js';
import { finalizeJobId, loadJobId } from '../../src/migration/migration-job-ids.js';
import { AmplitudeDataset } from '../amplitude-standin/dataset.js';
import { startAmplitudeStandin, type AmplitudeStandin } from '../amplitude-standin/server.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { countEvents, eventsByInsertId, eventStoreOf } from '../helpers/events.js';
import { until } from '../helpers/job-platform.js';
import { AMPLITUDE_CREDENTIALS, datasetInsertIds, migrationView, postMigration, waitForMigration } from '../helpers/migration-service.js';
import { serviceEnv, startWorkerProcess, terminate, type Spawned } from '../helpers/spawn.js';

const TOTAL = 60_000;
const START = '2024-02-01';
const END = '2024-02-10'; // 10 days
const SHUTDOWN_TIMEOUT_MS = 10_000;

describe.each(dbKinds())('SIGTERM mid migration, store on %s', (kind) => {
  // Many users (~30k with a profile): finalize sets them in ~30 pages of 1000, so a SIGTERM lands between two.
  const dataset = new AmplitudeDataset({ seed: 7, startDay: START, days: 10, totalEvents: TOTAL, users: 40_000 });
  const profiles = dataset.expectedProfiles();
  let t: TestDb;
  let app: TestApp;
  let standin: AmplitudeStandin;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'migration-sigterm-'));
  const running: Spawned[] = [];

  beforeAll(async () => {
    t = await createTestDb(kind);
    standin = await startAmplitudeStandin({ dataset, ...AMPLITUDE_CREDENTIALS, gzipLevel: 1 });
    app = await startTestApp(t.db, { AMPLITUDE_US_URL: standin.url, MIGRATION_TMP_DIR: tmp });
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill('SIGKILL')));
  });
  afterAll(async () => {
    for (const q of Object.values(app?.queues.queues ?? {})) await q.obliterate({ force: true });
    await app?.close();
    await standin?.close();
    await t?.destroy();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const workerEnv = () =>
    serviceEnv(t.url, app.config, {
      AMPLITUDE_US_URL: standin.url,
      MIGRATION_TMP_DIR: tmp,
      // Small batches: many commits per day, so the SIGTERM lands between two of them.
      MIGRATION_BATCH_EVENTS: '500',
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      // JOB_LOCK_MS stays at its default (30 s): a job the shutdown failed to hand back would sit
      // stalled that long, so the checks below on its state catch it instead of a quick takeover hiding it.
      LOG_LEVEL: 'info',
    });

  /** A migration of the whole dataset under way on one worker process, which gets SIGTERM once `reached`; returns after its exit. */
  async function sigtermMidMigration(reached: (p: SeededProject, id: string) => Promise<boolean>) {
    const p = await seedProject(t.db);
    const first = await startWorkerProcess(workerEnv(), running);
    const id = await postMigration(app.url, p, { START_DATE: START, END_DATE: END });
    await until(() => reached(p, id), 120_000, 5);
    const { code, ms } = await terminate(first);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(first.output()).toMatch(/job handed back to the queue/);
    return { p, id, paused: await migrationView(app.url, p, id) };
  }

  /** A fresh worker process finishes the migration: every event once, every profile once and right. */
  async function finishOnFreshWorker({ p, id }: { p: SeededProject; id: string }) {
    const second = await startWorkerProcess(workerEnv(), running);
    const done = await waitForMigration(app.url, p, id, 120_000);
    expect(done).toMatchObject({
      status: 'succeeded',
      phase: 'done',
      partitions: { total: 10, done: 10 },
      events_in_source: TOTAL,
      events_read: TOTAL,
      events_loaded: TOTAL,
      events_deduplicated: 0,
      events_rejected: 0,
      profiles_set: profiles.size,
      error: null,
    });
    // Every source event once: exactly its insert ids, none twice (eventsByInsertId throws on a second copy).
    const stored = await eventsByInsertId(eventStoreOf(t.db), p.id, () => true);
    const expected = datasetInsertIds(dataset);
    expect(expected.size).toBe(TOTAL);
    expect(stored.size).toBe(TOTAL);
    expect([...expected].filter((insertId) => !stored.has(insertId))).toEqual([]);
    expect(await countEvents(t.db, p.id)).toBe(TOTAL);
    expect(await countProfiles(t.db, 'user', p.id)).toBe(profiles.size);
    for (const [userId, want] of [...profiles.entries()].filter((_, i) => i % 499 === 0)) {
      const { $last_seen: _seen, ...props } = (await findProfile(t.db, p.id, { kind: 'user', distinctId: userId }))!.properties;
      expect(props, userId).toEqual(want.properties);
    }
    expect((await terminate(second)).code).toBe(0);
  }

  it(`in the load pass: stops at the days' checkpoints, and a fresh worker stores all ${TOTAL.toLocaleString('en-US')} events exactly once`, async () => {
    // Into the load pass with a day at most half loaded, so the SIGTERM (which lets the batch in
    // hand commit) leaves that day part-way whatever the machine's load; a trigger on the total
    // alone could land when every day in flight was on its last batch.
    type Day = { status: string; events_counted: number; events_read: number };
    const r = await sigtermMidMigration(async (p, id) =>
      ((await migrationView(app.url, p, id)).days as Day[]).some((d) => d.status === 'loading' && d.events_read > 0 && d.events_read <= d.events_counted / 2),
    );
    expect(r.paused).toMatchObject({ status: 'running', phase: 'load', events_in_source: TOTAL, events_deduplicated: 0, events_rejected: 0 });
    expect(r.paused.events_loaded).toBeLessThan(TOTAL);
    // Each day's batches and its checkpoint went together: the project holds what the days say they loaded.
    expect(await countEvents(t.db, r.p.id)).toBe(r.paused.events_loaded);
    expect(r.paused.events_read).toBe(r.paused.events_loaded);
    // At least one day stopped part-way, at a checkpoint the next worker resumes from.
    const days = r.paused.days as { day: string; status: string; events_counted: number; events_read: number }[];
    expect(days.filter((d) => d.status === 'loading' && d.events_read > 0 && d.events_read < d.events_counted).length).toBeGreaterThan(0);
    // Every day not loaded yet has its job waiting, no attempt used.
    for (const d of days.filter((x) => x.status !== 'done')) {
      const job = await app.queues.getJob('migration-day', loadJobId(r.id, d.day));
      expect([d.day, await job?.getState(), job?.attemptsMade]).toEqual([d.day, 'waiting', 0]);
    }
    await finishOnFreshWorker(r);
  }, 180_000);

  it(`in finalize: stops at the profile cursor, and a fresh worker sets the other profiles once`, async () => {
    const r = await sigtermMidMigration(async (_p, id) => ((await findMigration(t.db, id))?.profilesSet ?? 0) > 0);
    expect(r.paused).toMatchObject({ status: 'running', phase: 'finalize', days_done: 10, events_loaded: TOTAL, events_deduplicated: 0 });
    expect(r.paused.profiles_set).toBeLessThan(profiles.size);
    // Each page of profiles and the cursor went together: the project holds as many as the run says it set.
    expect(await countProfiles(t.db, 'user', r.p.id)).toBe(r.paused.profiles_set);
    const job = await app.queues.getJob('migration-finalize', finalizeJobId(r.id));
    expect([await job?.getState(), job?.attemptsMade]).toEqual(['waiting', 0]);
    await finishOnFreshWorker(r);
  }, 180_000);
});
