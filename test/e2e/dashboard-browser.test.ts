/**
 * The Bull dashboard in a real headless browser (Debian's /usr/bin/chromium driven by
 * playwright-core; .ci/run installs it — if it is missing this test FAILS, it does not skip):
 * 401 without (or with wrong) operator credentials; with them it lists the three queues, shows
 * a running job's progress ring and log lines, and a finished batch import at 100% with its log.
 * The dashboard does not depend on the database, so this runs on SQLite only.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handlers } from '../../jobs/index.js';
import type { JobHandler } from '../../jobs/types.js';
import { seedProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { body, gzip, ndjsonEvents, startInProcessWorker, until, type InProcessWorker } from '../helpers/job-platform.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

describe('Bull dashboard in headless Chromium', () => {
  let t: TestDb;
  let app: TestApp;
  let worker: InProcessWorker;
  let browser: Browser;
  let release: () => void = () => {};
  let importId = '';
  let projectId = 0;
  let importJobId = '';
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'board-uploads-'));

  beforeAll(async () => {
    expect(fs.existsSync(CHROMIUM), `${CHROMIUM} is required (apt-get install chromium; .ci/run installs it)`).toBe(true);
    t = await createTestDb('sqlite');
    app = await startTestApp(t.db, { UPLOAD_DIR: uploads });
    // A stand-in long job on the migration queue: reports 42 % and two log lines, then waits.
    const gate = new Promise<void>((resolve) => (release = resolve));
    const longJob: JobHandler<'migration-finalize'> = async (_p, ctx) => {
      await ctx.logLine('loading day 1 of 3');
      await ctx.logLine('loading day 2 of 3');
      await ctx.progress({ percent: 42, day: 2 });
      await Promise.race([gate, new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }))]);
      return 'done';
    };
    worker = await startInProcessWorker(t.db, app.config, { handlers: { ...handlers, 'migration-finalize': longJob } });
    await app.queues.enqueue('migration-finalize', { migrationId: 'm-42' }, { jobId: 'migration-finalize-m-42' });

    const p = await seedProject(t.db);
    const res = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?type=events`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/x-ndjson' },
      body: body(gzip(ndjsonEvents(25_000))),
    });
    const { results } = (await res.json()) as { results: { id: string; job_id: string } };
    importJobId = results.job_id;
    importId = results.id;
    projectId = p.id;
    await until(async () => (await (await app.queues.getJob('batch-import', importJobId))?.getState()) === 'completed');
    await until(async () => (await (await app.queues.getJob('migration-finalize', 'migration-finalize-m-42'))?.progress) !== 0);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  });
  afterAll(async () => {
    release();
    await browser?.close();
    await worker?.close();
    for (const q of Object.values(app.queues.queues)) await q.obliterate({ force: true });
    await app.close();
    await t.destroy();
    fs.rmSync(uploads, { recursive: true, force: true });
  });

  it('answers 401 without credentials and with wrong ones', async () => {
    const wrong = `Basic ${Buffer.from('operator:nope').toString('base64')}`;
    for (const extraHTTPHeaders of [undefined, { authorization: wrong }]) {
      const ctx = await browser.newContext(extraHTTPHeaders ? { extraHTTPHeaders } : {});
      const page = await ctx.newPage();
      const statuses: number[] = [];
      page.on('response', (r) => {
        if (r.url() === `${app.url}/admin/queues`) statuses.push(r.status());
      });
      // Chromium answers a Basic challenge it cannot meet with ERR_INVALID_AUTH_CREDENTIALS
      // instead of rendering the 401 page; the response it got is what counts.
      const res = await page.goto(`${app.url}/admin/queues`).catch(() => null);
      expect(res ? [res.status()] : statuses).toEqual([401]);
      expect(await page.innerText('body').catch(() => '')).not.toMatch(/batch-import/);
      await ctx.close();
    }
  });

  it('lists the three queues and shows progress and log lines of running and finished jobs', async () => {
    const ctx = await browser.newContext({ httpCredentials: { username: 'operator', password: 'operator-password' } });
    const page = await ctx.newPage();
    const res = await page.goto(`${app.url}/admin/queues`);
    expect(res!.status()).toBe(200);
    for (const name of ['warehouse-sync', 'migration', 'batch-import']) {
      await expect.poll(() => page.getByRole('link', { name, exact: true }).count(), { timeout: 15_000 }).toBeGreaterThan(0);
    }

    // The running job: a progress ring at 42 % and its log lines.
    await page.goto(`${app.url}/admin/queues/queue/migration?status=active`);
    await page.getByText('migration-finalize-m-42').waitFor({ timeout: 15_000 });
    await expect.poll(() => page.getByRole('progressbar').first().getAttribute('aria-valuenow')).toBe('42');
    await page.getByText('Logs', { exact: true }).first().click();
    await page.getByText('loading day 2 of 3').waitFor({ timeout: 10_000 });
    expect(await page.innerText('body')).toMatch(/loading day 1 of 3/);

    // The finished batch import: 100 % and the run's log lines.
    await page.goto(`${app.url}/admin/queues/queue/batch-import?status=completed`);
    await page.getByText(importJobId).waitFor({ timeout: 15_000 });
    // The card's name says whose job it is, not only a run id.
    await page.getByText(`batch-import · project ${projectId} · batch import ${importId}`).first().waitFor({ timeout: 10_000 });
    await expect.poll(() => page.getByRole('progressbar').first().getAttribute('aria-valuenow')).toBe('100');
    await page.getByText('Logs', { exact: true }).first().click();
    await page.getByText(/succeeded: 25000 imported/).waitFor({ timeout: 10_000 });
    expect(await page.innerText('body')).toMatch(/started: 25000 records/);
    await ctx.close();
  });
});
