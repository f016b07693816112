/** Every request leaves one JSON log line with its request id — and never a credential. */
import { eventStoreOf } from '../helpers/events.js';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/accounts/authenticator.js';
import { createApp } from '../../src/http/app.js';
import { listen } from '../../src/http/server.js';
import { createSecretBox, secretsKeyFrom } from '../../src/lib/secrets.js';
import { JobQueues } from '../../src/queue/queues.js';
import { createRedisConnections } from '../../src/queue/redis-connection.js';
import { basicAuth, seedProject } from '../helpers/accounts.js';
import { testConfig } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

describe('request logging', () => {
  let t: TestDb;
  const lines: Record<string, unknown>[] = [];
  let raw = '';
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    t = await createTestDb('sqlite');
    const config = testConfig();
    const sink = new Writable({
      write(chunk, _enc, cb) {
        raw += chunk.toString();
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    });
    const queues = new JobQueues(createRedisConnections(config));
    const app = createApp({
      config,
      db: t.db,
      events: eventStoreOf(t.db),
      log: pino({ level: 'info' }, sink),
      auth: new Authenticator(t.db),
      secrets: createSecretBox(secretsKeyFrom(config.SECRETS_KEY)),
      queues,
      readiness: [],
    });
    const server = await listen(app, config);
    url = `http://127.0.0.1:${server.port}`;
    close = async () => {
      await server.close();
      await queues.close();
    };
  });
  afterAll(async () => {
    await close();
    await t.destroy();
  });

  it('logs method, path, status and request id, without query strings or credentials', async () => {
    const p = await seedProject(t.db);
    const body = JSON.stringify([{ event: 'e', properties: { time: Date.now(), distinct_id: 'u', token: p.token } }]);
    const imported = await fetch(`${url}/import?project_id=${p.id}`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/json', 'x-request-id': 'req-42' },
      body,
    });
    expect(imported.status).toBe(200);
    expect(imported.headers.get('x-request-id')).toBe('req-42');
    const data = Buffer.from(body).toString('base64');
    const tracked = await fetch(`${url}/track?data=${encodeURIComponent(data)}`);
    expect(await tracked.text()).toBe('1');
    const denied = await fetch(`${url}/import?project_id=${p.id}`, { method: 'POST', headers: { authorization: basicAuth(p.api_secret, '') }, body: '[' });
    expect(denied.status).toBe(400);

    // Inside mounted routers (the app API, Bull Board), the full path, still without the query.
    const listed = await fetch(`${url}/api/app/workspaces/1/experiments?project_id=${p.id}&api_secret=${p.api_secret}`, { headers: { authorization: p.basic } });
    const board = await fetch(`${url}/admin/queues/api/queues?token=${p.token}`, { headers: { authorization: basicAuth('operator', 'operator-password') } });
    expect(board.status).toBe(200);

    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ method: 'GET', path: '/api/app/workspaces/1/experiments', status: listed.status }),
        expect.objectContaining({ method: 'GET', path: '/admin/queues/api/queues', status: 200 }),
      ]),
    );
    expect(requests).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ reqId: 'req-42', method: 'POST', path: '/import', status: 200 }),
        expect.objectContaining({ method: 'GET', path: '/track', status: 200 }),
        expect.objectContaining({ method: 'POST', path: '/import', status: 400 }),
      ]),
    );
    for (const secret of [p.sa.secret, p.api_secret, p.token, data]) expect(raw).not.toContain(secret);
  });
});
