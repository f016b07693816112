/**
 * The migration service end to end: the web app over HTTP, real worker processes
 * (`tsx src/bin/worker.ts`, the real runtime and reconciler), the Amplitude Export API stand-in
 * serving a seeded 30-day dataset (one empty day → 404, one "too large" day → 24 hourly
 * requests, a 429 first), and both databases.
 *
 * - A 30-day migration runs its days (its partitions) on three worker processes; one of them is
 *   killed with `kill -9` in the middle of loading; the others finish it and the totals are exact:
 *   every event stored once, read once, none counted as a duplicate (no batch was applied twice,
 *   none lost), the profiles right, and the view names the workers.
 * - The same migration posted again adds nothing; a dry run reports the count and stores nothing.
 *
 * Size: 300k events on SQLite; 60k on Postgres to keep the suite's run time modest on a 2-core
 * machine (the code path is the same; the SQLite run is the 300k proof).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { countEvents } from '../helpers/events.js';
import { countProfiles, findProfile } from '../../src/db/profiles.repo.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { until } from '../helpers/job-platform.js';
import { AMPLITUDE_CREDENTIALS, migrationView, postMigration, waitForMigration } from '../helpers/migration-service.js';
import { serviceEnv, startWorkerProcess, type Spawned } from '../helpers/spawn.js';
import { loadJobId } from '../../src/migration/migration-job-ids.js';
import { AmplitudeDataset } from '../amplitude-standin/dataset.js';
import { startAmplitudeStandin, type AmplitudeStandin } from '../amplitude-standin/server.js';

const SIZES = { sqlite: 300_000, postgres: 60_000 } as const;
const START = '2024-02-01';
const END = '2024-03-01'; // 30 days (2024 is a leap year)

describe.each(dbKinds())('Amplitude migration end to end on %s', (kind) => {
  const total = SIZES[kind];
  const dataset = new AmplitudeDataset({ seed: 99, startDay: START, days: 30, totalEvents: total, users: Math.round(total / 60), emptyDays: ['2024-02-10'] });
  let t: TestDb;
  let app: TestApp;
  let standin: AmplitudeStandin;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'migration-e2e-'));
  const running: Spawned[] = [];

  beforeAll(async () => {
    t = await createTestDb(kind);
    standin = await startAmplitudeStandin({ dataset, ...AMPLITUDE_CREDENTIALS, tooLargeDays: ['2024-02-20'], rateLimitFirst: 1, retryAfterSeconds: 1, gzipLevel: 1 });
    app = await startTestApp(t.db, { AMPLITUDE_US_URL: standin.url, MIGRATION_TMP_DIR: tmp });
  }, 120_000);
  afterEach(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill('SIGKILL')));
  });
  afterAll(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill('SIGKILL')));
    for (const q of Object.values(app.queues.queues)) await q.obliterate({ force: true });
    await app.close();
    await standin.close();
    await t.destroy();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const startWorker = () =>
    startWorkerProcess(
      serviceEnv(t.url, app.config, {
        LOG_LEVEL: 'info',
        AMPLITUDE_US_URL: standin.url,
        MIGRATION_TMP_DIR: tmp,
        // A killed worker's jobs are picked up again after about this long.
        JOB_LOCK_MS: '3000',
        RECONCILE_INTERVAL_SEC: '3',
      }),
      running,
    );
  const post = (p: SeededProject, extra: Record<string, unknown> = {}) => postMigration(app.url, p, { START_DATE: START, END_DATE: END, ...extra });
  const view = (p: SeededProject, id: string) => migrationView(app.url, p, id);
  const finished = (p: SeededProject, id: string) => waitForMigration(app.url, p, id, 400_000);

  it(`runs its days on three workers, survives kill -9 of one mid-load with exact totals (${total.toLocaleString('en-US')} events), and a re-run adds nothing`, async () => {
    const p = await seedProject(t.db);
    const id = await post(p);
    const workers = await Promise.all([startWorker(), startWorker(), startWorker()]);
    // Wait until loading is well under way on more than one worker, then kill without warning one
    // that has finished a day (a day names the worker that last took it: one whose only day was
    // taken over after its death is, rightly, no longer named). The day's load job must be
    // completed in Redis, not just its row marked done: a job whose completion is not yet
    // acknowledged is taken over after the kill, and the day then names the worker that took it.
    const mid = await until(async () => {
      const v = await view(p, id);
      if (!(v.workers.length >= 2 && (await countEvents(t.db, p.id)) >= total * 0.3)) return undefined;
      for (const d of v.days as { day: string; status: string; worker: string | null }[]) {
        if (d.status !== 'done' || !d.worker) continue;
        const job = await app.queues.getJob('migration-day', loadJobId(id, d.day));
        if ((await job?.getState()) !== 'completed') continue;
        v.victim = d.worker;
        return v;
      }
      return undefined;
    }, 300_000, 100);
    const victimPid = Number(String(mid.victim).split(':').pop());
    const victim = workers.find((w) => w.child.pid === victimPid)!;
    expect(victim).toBeDefined();
    await victim.kill('SIGKILL');
    expect(mid.status).toBe('running');
    expect(mid.events_loaded).toBeLessThan(total);

    const done = await finished(p, id);
    // Days are the partitions; the view names every worker that took one (the killed one too).
    expect(done.partitions).toEqual({ total: 30, done: 30 });
    expect(done.workers.length).toBeGreaterThanOrEqual(2);
    expect(done.workers).toContain(mid.victim);
    expect(done).toMatchObject({
      status: 'succeeded',
      days_total: 30,
      days_done: 30,
      events_in_source: total,
      events_read: total,
      events_loaded: total,
      events_deduplicated: 0,
      events_rejected: 0,
      error: null,
    });
    expect(await countEvents(t.db, p.id)).toBe(total);
    const expected = dataset.expectedProfiles();
    expect(done.profiles_set).toBe(expected.size);
    expect(await countProfiles(t.db, 'user', p.id)).toBe(expected.size);
    for (const [userId, want] of [...expected.entries()].filter((_, i) => i % 97 === 0)) {
      const { $last_seen, ...props } = (await findProfile(t.db, p.id, { kind: 'user', distinctId: userId }))!.properties;
      expect(props, userId).toEqual(want.properties);
      expect($last_seen).toBe(new Date(want.time).toISOString().slice(0, 19));
    }
    // The too-large day went hour by hour; the empty day answered 404.
    expect(done.days.find((d: any) => d.day === '2024-02-20').windows).toHaveLength(24);
    expect(done.days.find((d: any) => d.day === '2024-02-10')).toMatchObject({ events_counted: 0, status: 'done' });

    // The same migration again: a new run that reads everything and stores nothing new.
    const again = await post(p);
    expect(again).not.toBe(id);
    const second = await finished(p, again);
    expect(second).toMatchObject({ status: 'succeeded', events_read: total, events_loaded: 0, events_deduplicated: total });
    expect(await countEvents(t.db, p.id)).toBe(total);
    expect(await countProfiles(t.db, 'user', p.id)).toBe(expected.size);
  }, 600_000);

  it(`a dry run reports ${total.toLocaleString('en-US')} and stores nothing`, async () => {
    const p = await seedProject(t.db);
    await startWorker();
    const id = await post(p, { DRY_RUN: true });
    const done = await finished(p, id);
    expect(done).toMatchObject({ status: 'succeeded', dry_run: true, dry_run_count: total, events_loaded: 0, profiles_set: 0 });
    expect(await countEvents(t.db, p.id)).toBe(0);
    expect(await countProfiles(t.db, 'user', p.id)).toBe(0);
  }, 300_000);
});
