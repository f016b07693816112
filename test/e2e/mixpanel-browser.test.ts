/**
 * The official `mixpanel-browser` (its dist bundle, as a site would load it) in headless
 * Chromium (Debian's /usr/bin/chromium via playwright-core; missing → the test FAILS, it does not
 * skip), on a page served from one origin (http://127.0.0.1:<page port>) talking to the service
 * on another (http://localhost:<service port>): the SDK sends credentialed cross-origin requests,
 * so every answer must echo the origin with credentials (CONTRACT §2.2).
 *
 * In each transport the SDK has — batched (`batch_requests`, base64 `data=` bodies), one request
 * per call (JSON payload format), and `sendBeacon` — the page tracks before and after
 * `identify`, registers a super property and sets/increments profile properties. The page sees
 * no failed request, no non-200 answer and no console error; every event is stored exactly once
 * (checked through the export), the anonymous events resolve to the identified user (export,
 * identities, unique count) and the profile holds the values (checked through engage).
 * playwright's launch() gives the browser a fresh temporary profile, and each mode its own context.
 * The browser path does not depend on the database kind, so this runs on SQLite only.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { get, lines, qs, type ExportLine } from '../helpers/read-back.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // `localhost` must reach the service's IPv4 listener without an IPv6 attempt first.
  '--host-resolver-rules=MAP localhost 127.0.0.1',
];
const SDK_BUNDLE = path.resolve('node_modules/mixpanel-browser/dist/mixpanel.umd.js');

interface Mode {
  name: string;
  config: Record<string, unknown>;
  /** Requests per kind the page must see succeed (beacons give no answer to check). */
  beacon?: boolean;
}

const MODES: Mode[] = [
  { name: 'batched', config: { batch_requests: true, batch_flush_interval_ms: 200 } },
  { name: 'one request per call, JSON payloads', config: { batch_requests: false, api_payload_format: 'json' } },
  { name: 'sendBeacon', config: { batch_requests: false, api_transport: 'sendBeacon' }, beacon: true },
];

/** The page: loads the SDK bundle from its own origin, then runs the steps `run(config)` names. */
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><script src="/mixpanel.umd.js"></script></head><body>
<script>
window.run = function (token, config) {
  mixpanel.init(token, Object.assign({ persistence: 'localStorage', ignore_dnt: true }, config));
  mixpanel.track('anonymous view', { page: '/pricing' });
  mixpanel.register({ plan: 'free' });
  mixpanel.track('signup clicked');
  mixpanel.identify('user-ada');
  mixpanel.track('signed in', { method: 'password' });
  mixpanel.people.set({ name: 'Ada', plan: 'free' });
  mixpanel.people.increment('logins', 2);
  mixpanel.people.increment('logins');
  return mixpanel.get_property('$device_id');
};
</script></body></html>`;

describe('mixpanel-browser in headless Chromium, cross-origin', () => {
  let t: TestDb;
  let app: TestApp;
  let serviceUrl: string;
  let pageServer: http.Server;
  let pageUrl: string;
  let browser: Browser;

  beforeAll(async () => {
    expect(fs.existsSync(CHROMIUM), `${CHROMIUM} is required (apt-get install chromium; .ci/run installs it)`).toBe(true);
    t = await createTestDb('sqlite');
    app = await startTestApp(t.db);
    serviceUrl = `http://localhost:${new URL(app.url).port}`;
    const bundle = fs.readFileSync(SDK_BUNDLE);
    pageServer = http.createServer((req, res) => {
      if (req.url === '/mixpanel.umd.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
      else if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      // Chromium asks every new origin for a favicon; a 404 would be logged as a console error.
      else if (req.url === '/favicon.ico') res.writeHead(204).end();
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
    pageUrl = `http://127.0.0.1:${(pageServer.address() as { port: number }).port}/`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => pageServer?.close(resolve));
    await app?.close();
    await t?.destroy();
  });

  async function exported(p: SeededProject): Promise<ExportLine[]> {
    const day = new Date().toISOString().slice(0, 10);
    const res = await get(`${app.url}/api/2.0/export${qs({ project_id: p.id, from_date: day, to_date: day })}`, p.basic);
    expect(res.status).toBe(200);
    return lines(res.text);
  }

  it.each(MODES)('$name: no failed request, no console error, each event once, the profile holds the values', async (mode) => {
    const p = await seedProject(t.db);
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    const problems: string[] = [];
    const answered: { url: string; status: number; acao: string | undefined }[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`));
    page.on('response', (r) => {
      if (r.url().startsWith(serviceUrl)) answered.push({ url: r.url(), status: r.status(), acao: r.headers()['access-control-allow-origin'] });
    });

    await page.goto(pageUrl);
    const deviceId = (await page.evaluate(([token, config]) => (window as any).run(token, config), [p.token, { ...mode.config, api_host: serviceUrl }] as const)) as string;
    expect(deviceId).toMatch(/^[0-9a-f-]{20,}$/);

    // Wait until every event has landed, then a while longer: a retried send would show up as a second copy.
    const wanted = ['$identify', 'anonymous view', 'signed in', 'signup clicked'];
    await expect.poll(async () => (await exported(p)).map((e) => e.event).sort(), { timeout: 20_000, interval: 250 }).toEqual(wanted);
    await expect
      .poll(async () => (await get(`${app.url}/api/2.0/engage${qs({ project_id: p.id, distinct_id: 'user-ada' })}`, p.basic)).json().results?.[0]?.$properties?.logins, {
        timeout: 20_000,
        interval: 250,
      })
      .toBe(3);
    await page.waitForTimeout(1000);
    await ctx.close();

    expect(problems).toEqual([]);
    expect(answered.length).toBeGreaterThan(0);
    for (const a of answered) expect(a, a.url).toMatchObject({ status: expect.any(Number), acao: new URL(pageUrl).origin });
    if (!mode.beacon) expect(answered.filter((a) => a.status !== 200 && a.status !== 204)).toEqual([]);

    const events = await exported(p);
    expect(events.map((e) => e.event).sort()).toEqual(wanted);
    const byName = Object.fromEntries(events.map((e) => [e.event, e.properties]));
    // Sent anonymously, exported as the user's: identify() linked the device (docs/identity.md).
    expect(byName['anonymous view']).toMatchObject({ distinct_id: 'user-ada', $device_id: deviceId, page: '/pricing' });
    expect(byName['anonymous view']!.$user_id).toBeUndefined();
    expect(byName['signup clicked']).toMatchObject({ distinct_id: 'user-ada', $device_id: deviceId, plan: 'free' });
    expect(byName['signed in']).toMatchObject({ $device_id: deviceId, $user_id: 'user-ada', distinct_id: 'user-ada', plan: 'free', method: 'password' });
    expect(byName.$identify).toMatchObject({ distinct_id: 'user-ada', $anon_distinct_id: `$device:${deviceId}` });
    // The token authenticates; it is not stored as a property.
    for (const e of events) expect(e.properties.token).toBeUndefined();

    const cluster = await get(`${app.url}/api/app/projects/${p.id}/identities${qs({ distinct_id: `$device:${deviceId}` })}`, p.basic);
    expect(cluster.json()).toEqual({ status: 'ok', results: { user_id: 'user-ada', device_ids: [deviceId] } });
    const day = new Date().toISOString().slice(0, 10);
    const unique = await get(`${app.url}/api/2.0/segmentation${qs({ project_id: p.id, from_date: day, to_date: day, type: 'unique' })}`, p.basic);
    expect(unique.json().data.values).toEqual(Object.fromEntries(wanted.map((name) => [name, { [day]: 1 }])));

    const profile = (await get(`${app.url}/api/2.0/engage${qs({ project_id: p.id, distinct_id: 'user-ada' })}`, p.basic)).json();
    expect(profile.results).toHaveLength(1);
    expect(profile.results[0].$properties).toMatchObject({ name: 'Ada', plan: 'free', logins: 3 });
  });
});
