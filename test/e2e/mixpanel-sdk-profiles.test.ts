/**
 * The official `mixpanel` Node SDK's profile calls over HTTPS (self-signed certificate trusted
 * via NODE_EXTRA_CA_CERTS in a child process): with the project token only, and with the SDK's
 * `secret` option (project secret as Basic, which the SDK sends only over HTTPS). Stored
 * profiles are checked field for field.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findProfile } from '../../src/db/profiles.repo.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { makeSelfSignedCert, type TestCert } from '../helpers/tls.js';

const run = promisify(execFile);

describe.each(dbKinds())('official mixpanel SDK profile calls over HTTPS on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let cert: TestCert;
  let p: SeededProject;
  let port: number;

  beforeAll(async () => {
    cert = makeSelfSignedCert();
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { TLS_CERT_FILE: cert.certFile, TLS_KEY_FILE: cert.keyFile });
    port = Number(new URL(app.url).port);
    p = await seedProject(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
    cert?.remove();
  });

  async function sdk(args: Record<string, unknown>): Promise<Record<string, string | null>> {
    const { stdout } = await run(process.execPath, ['test/fixtures/mixpanel-profiles-client.mjs', JSON.stringify({ host: '127.0.0.1', port, ...args })], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: cert.certFile, HTTPS_PROXY: '', HTTP_PROXY: '' },
      timeout: 30_000,
    });
    return JSON.parse(stdout.trim().split('\n').pop()!);
  }

  it('people.set, people.increment, people.union and groups.set with the token and with the API secret', async () => {
    const steps = [
      { name: 'set', call: 'people.set', args: ['tls-user', { $email: 'a@example.com', plan: 'pro' }], modifiers: { $time: '2024-05-01T00:00:00Z' } },
      { name: 'stale', call: 'people.set', args: ['tls-user', { plan: 'free' }], modifiers: { $time: '2024-04-01T00:00:00Z' } },
      { name: 'inc', call: 'people.increment', args: ['tls-user', { logins: 2 }] },
      { name: 'union', call: 'people.union', args: ['tls-user', { devices: ['ios', 'web'] }] },
      { name: 'group', call: 'groups.set', args: ['company', 'Acme', { plan: 'enterprise', seats: 40 }] },
    ];
    expect(await sdk({ token: p.token, steps })).toEqual({ set: null, stale: null, inc: null, union: null, group: null });
    const user = await findProfile(t.db, p.id, { kind: 'user', distinctId: 'tls-user' });
    const { $last_seen: lastSeen, ...props } = user!.properties;
    expect(props).toEqual({ $email: 'a@example.com', plan: 'pro', logins: 2, devices: ['ios', 'web'] });
    expect(typeof lastSeen).toBe('string');
    expect((await findProfile(t.db, p.id, { kind: 'group', groupKey: 'company', groupId: 'Acme' }))?.properties).toEqual({ plan: 'enterprise', seats: 40 });

    // The SDK's `secret` option: Basic auth with the project secret (plus the token in the updates).
    const verbose = await sdk({ token: p.token, secret: p.api_secret, verbose: true, steps: [{ name: 'inc', call: 'people.increment', args: ['tls-user', { logins: 1 }] }] });
    expect(verbose).toEqual({ inc: null });
    expect((await findProfile(t.db, p.id, { kind: 'user', distinctId: 'tls-user' }))?.properties.logins).toBe(3);
  });

  it('refusals reach the SDK as errors: another project\'s secret, an unknown token', async () => {
    const other = await seedProject(t.db);
    const out = await sdk({
      token: p.token,
      secret: other.api_secret,
      verbose: true,
      steps: [{ name: 'crossed', call: 'people.set', args: ['x', { a: 1 }] }],
    });
    expect(out.crossed).toMatch(/another project/);
    const unknown = await sdk({ token: 'not-a-token', steps: [{ name: 'bad', call: 'groups.set', args: ['k', 'g', { a: 1 }] }] });
    expect(unknown.bad).toBe('Error: Mixpanel Server Error: 0');
    expect(await findProfile(t.db, p.id, { kind: 'user', distinctId: 'x' })).toBeUndefined();
  });
});
