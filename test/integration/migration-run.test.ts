/**
 * A whole migration over HTTP and the real queue, with the jobs run in-process through the
 * registered handlers (test/helpers/migration-driver.ts), on SQLite and Postgres: counts, loads,
 * profiles, re-runs, dry runs, the free-migration limit, bad credentials, an interrupted day.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsReconcileSource } from '../../jobs/migration.reconcile.js';
import { countEvents, eventStoreOf, pageEvents } from '../helpers/events.js';
import { countProfiles, findProfile } from '../../src/db/profiles.repo.js';
import { countStagedUsers } from '../../src/db/migration-user-props.repo.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { driveMigrationQueue } from '../helpers/migration-driver.js';
import { AmplitudeDataset } from '../amplitude-standin/dataset.js';
import { startAmplitudeStandin, type AmplitudeStandin } from '../amplitude-standin/server.js';

const START = '2024-04-01';
const END = '2024-04-06';
const dataset = new AmplitudeDataset({ seed: 42, startDay: START, days: 6, totalEvents: 12_000, users: 400, emptyDays: ['2024-04-03'] });
const creds = { SOURCE_TOOL_API_KEY: 'amp-key', SOURCE_TOOL_API_SECRET: 'amp-secret' };

describe.each(dbKinds())('migration run on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let standin: AmplitudeStandin;
  let tmp: string;

  beforeAll(async () => {
    t = await createTestDb(kind);
    standin = await startAmplitudeStandin({ dataset, apiKey: 'amp-key', apiSecret: 'amp-secret', tooLargeDays: ['2024-04-05'], rateLimitFirst: 1, retryAfterSeconds: 0 });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'migration-run-'));
    app = await startTestApp(t.db, { AMPLITUDE_US_URL: standin.url, MIGRATION_TMP_DIR: tmp, MIGRATION_RETRY_BASE_MS: 10, MIGRATION_BATCH_EVENTS: 1000 });
  });
  afterAll(async () => {
    await app.queues.queues.migration.obliterate({ force: true });
    await app.close();
    await standin.close();
    await t.destroy();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  async function post(p: SeededProject, extra: Record<string, unknown> = {}) {
    const res = await fetch(`${app.url}/migrate/amplitude`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...creds, SERVICE_TOKEN: p.token, START_DATE: START, END_DATE: END, ...extra }),
    });
    return { status: res.status, body: (await res.json()) as { status: string; results: Record<string, any>; active_migration_id?: string } };
  }

  async function status(p: SeededProject, id: string) {
    const res = await fetch(`${app.url}/migrate/migrations/${id}`, { headers: { authorization: `Basic ${Buffer.from(`${p.token}:`).toString('base64')}` } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { results: Record<string, any> }).results;
  }

  const drive = () => driveMigrationQueue(t.db, app.config, app.queues);

  it('loads every event once, sets each user profile from their latest event, and reports it', async () => {
    const p = await seedProject(t.db);
    const created = await post(p);
    expect(created.status).toBe(202);
    expect(created.body).toEqual({
      status: 'ok',
      results: { migration_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'queued', start_date: START, end_date: END, dry_run: false },
    });
    const id = created.body.results.migration_id as string;
    // A second identical post while the first is in flight is refused, naming the first.
    const twin = await post(p);
    expect(twin.status).toBe(409);
    expect(twin.body.active_migration_id).toBe(id);

    const run = await drive();
    expect(run.jobs.filter((j) => j.error)).toEqual([]);
    // 6 count jobs, the counted step, 5 load jobs (the empty day needs none), finalize.
    expect(run.jobs.map((j) => j.name)).toEqual([...Array(6).fill('migration-day'), 'migration-finalize', ...Array(5).fill('migration-day'), 'migration-finalize']);

    const total = dataset.totalEvents();
    const s = await status(p, id);
    expect(s).toMatchObject({
      status: 'succeeded',
      phase: 'done',
      days_total: 6,
      days_done: 6,
      events_in_source: total,
      events_read: total,
      events_loaded: total,
      events_deduplicated: 0,
      events_rejected: 0,
      dry_run_count: null,
      error: null,
      // Days are the migration's partitions; the worker that ran them is named.
      partitions: { total: 6, done: 6 },
      workers: [expect.stringMatching(/^.+:\d+$/)],
    });
    const expected = dataset.expectedProfiles();
    expect(s.profiles_set).toBe(expected.size);
    expect(s.days.find((d: any) => d.day === '2024-04-03')).toMatchObject({ status: 'done', events_counted: 0 });
    expect(s.days.find((d: any) => d.day === '2024-04-05').windows).toHaveLength(24);
    expect(standin.requests.filter((r) => r.start.startsWith('20240405T') && r.start === r.end)).toHaveLength(24);

    expect(await countEvents(t.db, p.id)).toBe(total);
    expect(await countProfiles(t.db, 'user', p.id)).toBe(expected.size);
    for (const [userId, want] of [...expected.entries()].slice(0, 50)) {
      const profile = await findProfile(t.db, p.id, { kind: 'user', distinctId: userId });
      const { $last_seen, ...props } = profile!.properties;
      expect(props).toEqual(want.properties);
      expect($last_seen).toBe(new Date(want.time).toISOString().slice(0, 19));
    }
    const sample = await pageEvents(t.db, { projectId: p.id, fromMs: 0, toMs: Date.now(), limit: 5 });
    expect(sample[0]!.properties).toMatchObject({ $import: true, $source: 'amplitude-migration', $migration_id: id });
    expect(await countStagedUsers(t.db, id)).toBe(0);
    // Migrated events carry user and device ids: each user's devices are linked to them (docs/identity.md).
    for (const userId of [...expected.keys()].slice(0, 10)) {
      const cluster = await eventStoreOf(t.db).identityOf(p.id, userId);
      expect(cluster.userId).toBe(userId);
      expect(cluster.deviceIds.length).toBeGreaterThan(0);
      for (const d of cluster.deviceIds) expect(d).toMatch(new RegExp(`^device-${userId.slice('user-'.length)}-[01]$`));
    }
    expect(fs.readdirSync(tmp)).toEqual([]);

    // Running the same migration again (the first has finished): a new run that adds nothing.
    const again = await post(p);
    expect(again.body.results.migration_id).not.toBe(id);
    await drive();
    const s2 = await status(p, again.body.results.migration_id);
    expect(s2).toMatchObject({ status: 'succeeded', events_loaded: 0, events_deduplicated: total, events_read: total });
    expect(await countEvents(t.db, p.id)).toBe(total);
    expect(await countProfiles(t.db, 'user', p.id)).toBe(expected.size);

    // Usage: this month's migration events, by source.
    const usage = await fetch(`${app.url}/api/app/projects/${p.id}/usage`, { headers: { authorization: p.basic } });
    expect(((await usage.json()) as any).results).toMatchObject({ project_id: p.id, events: total, sources: { migration: total } });
  });

  it('a dry run reports the count and stores nothing', async () => {
    const p = await seedProject(t.db);
    const created = await post(p, { DRY_RUN: true });
    expect(created.body.results.dry_run).toBe(true);
    await drive();
    const s = await status(p, created.body.results.migration_id);
    expect(s).toMatchObject({ status: 'succeeded', dry_run_count: dataset.totalEvents(), events_loaded: 0, profiles_set: 0 });
    expect(await countEvents(t.db, p.id)).toBe(0);
    expect(await countProfiles(t.db, 'user', p.id)).toBe(0);
  });

  it('refuses a source over the free-migration limit having loaded nothing', async () => {
    const limited = await startTestApp(t.db, { AMPLITUDE_US_URL: standin.url, MIGRATION_TMP_DIR: tmp, MIGRATION_MAX_EVENTS: 5000 });
    try {
      const p = await seedProject(t.db);
      const res = await fetch(`${limited.url}/migrate/amplitude`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...creds, SERVICE_TOKEN: p.token, START_DATE: START, END_DATE: END }),
      });
      const id = ((await res.json()) as any).results.migration_id as string;
      await driveMigrationQueue(t.db, limited.config, limited.queues);
      const view = await fetch(`${limited.url}/api/app/projects/${p.id}/migrations/${id}`, { headers: { authorization: p.basic } });
      const s = ((await view.json()) as any).results;
      expect(s.status).toBe('failed');
      expect(s.error).toMatch(/holds 12,000 events .* over the free-migration limit of 5,000; nothing was loaded/);
      expect(await countEvents(t.db, p.id)).toBe(0);

      // A dry run still answers with the count, and says a real run would be refused.
      const dry = await fetch(`${limited.url}/migrate/amplitude`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...creds, SERVICE_TOKEN: p.token, START_DATE: START, END_DATE: END, DRY_RUN: true }),
      });
      const dryId = ((await dry.json()) as any).results.migration_id as string;
      await driveMigrationQueue(t.db, limited.config, limited.queues);
      const dv = await fetch(`${limited.url}/api/app/projects/${p.id}/migrations/${dryId}`, { headers: { authorization: p.basic } });
      const d = ((await dv.json()) as any).results;
      expect(d).toMatchObject({ status: 'succeeded', dry_run_count: 12_000, error: null });
      expect(d.log.join('\n')).toMatch(/over the free-migration limit of 5000: a real run would be refused/);
    } finally {
      await limited.queues.queues.migration.obliterate({ force: true });
      await limited.close();
    }
  });

  it('fails with the source message when Amplitude rejects the credentials', async () => {
    const p = await seedProject(t.db);
    const created = await post(p, { SOURCE_TOOL_API_SECRET: 'not-the-secret', START_DATE: '2024-04-01', END_DATE: '2024-04-02' });
    const run = await drive();
    expect(run.jobs[0]!.error).toMatch(/Amplitude rejected the API key and secret/);
    const s = await status(p, created.body.results.migration_id);
    expect(s.status).toBe('failed');
    expect(s.error).toMatch(/^2024-04-0[12]: Amplitude rejected the API key and secret \(HTTP 401/);
    // The day that failed says so too (it used to show its status with no error).
    const failedDay = (s.days as { day: string; error: string | null }[]).find((d) => d.error !== null);
    expect(failedDay?.error).toMatch(/^Amplitude rejected the API key and secret \(HTTP 401/);
    expect(s.error.startsWith(`${failedDay!.day}: `)).toBe(true);
    expect(JSON.stringify(s)).not.toContain('not-the-secret');
    expect(await countEvents(t.db, p.id)).toBe(0);
  });

  it('an interrupted day resumes from its checkpoint with exact totals (the reconciler re-enqueues it)', async () => {
    const p = await seedProject(t.db);
    const created = await post(p, { START_DATE: '2024-04-01', END_DATE: '2024-04-01' });
    const id = created.body.results.migration_id as string;
    // Count, then the counted step; stop before loading.
    await driveMigrationQueue(t.db, app.config, app.queues, { maxJobs: 2 });
    // Load with a signal that aborts after the first committed batch (as a shutdown would). Small
    // batches: the writer commits every batch already decoded at once (up to 4), so a day of three
    // 1000-event batches decoded quickly could go in one commit, with no moment to interrupt it.
    const abort = new AbortController();
    const timer = setInterval(async () => {
      if ((await countEvents(t.db, p.id)) > 0) abort.abort(new Error('shutdown'));
    }, 5);
    const first = await driveMigrationQueue(t.db, { ...app.config, MIGRATION_BATCH_EVENTS: 100 }, app.queues, { signalFor: () => abort.signal, maxJobs: 1 });
    clearInterval(timer);
    expect(first.jobs[0]!.error).toMatch(/shutdown/);
    const mid = await status(p, id);
    expect(mid.status).toBe('running');
    expect(mid.events_loaded).toBeGreaterThan(0);
    expect(mid.events_loaded).toBeLessThan(dataset.countForDay('2024-04-01'));
    expect(await countEvents(t.db, p.id)).toBe(mid.events_loaded);

    // The job is gone (as if Redis lost it): the reconciler names it from SQL.
    const unfinished = (await migrationsReconcileSource.findUnfinished(t.db)).filter((r) => (r.payload as { migrationId: string }).migrationId === id);
    expect(unfinished.map((r) => r.jobId)).toEqual([`migration-${id}-2024-04-01-load`]);
    for (const r of unfinished) await app.queues.enqueue(r.jobName, r.payload as never, { jobId: r.jobId });
    await drive();
    const s = await status(p, id);
    const n = dataset.countForDay('2024-04-01');
    expect(s).toMatchObject({ status: 'succeeded', events_loaded: n, events_read: n, events_deduplicated: 0 });
    expect(await countEvents(t.db, p.id)).toBe(n);
  });
});
