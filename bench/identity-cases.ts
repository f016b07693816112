/**
 * The identity bench's measurements, each in its own process (bench/isolated.ts): seed a store
 * with `events` events over `devices` devices and `days` days (half the devices linked to a user,
 * two devices per user, a share of the events identified), then time `GET /api/2.0/segmentation`
 * with type=unique (COUNT DISTINCT over the resolved id, pushed down to the store) and, for
 * reference, type=general over the whole range by day.
 */
import crypto from 'node:crypto';
import { configFrom } from '../config/index.js';
import { createServiceAccount } from '../src/accounts/accounts.service.js';
import { Authenticator } from '../src/accounts/authenticator.js';
import { createApp } from '../src/http/app.js';
import { listen } from '../src/http/server.js';
import { ingestEvents } from '../src/ingest/events.ingest.js';
import { silentLogger } from '../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../src/lib/secrets.js';
import { JobQueues } from '../src/queue/queues.js';
import { createRedisConnections } from '../src/queue/redis-connection.js';
import { benchEventStore, openBenchStore } from './bench-store.js';
import { rng } from './ingest-data.js';

const DAY = 86_400_000;
const BATCH = 2000;

export interface UniqueArgs {
  kind: 'sqlite' | 'postgres';
  target: string;
  events: number;
  devices: number;
  days: number;
  redisUrl: string;
  repeats: number;
}

export interface UniqueResult {
  seedSeconds: number;
  uniqueMs: number;
  generalMs: number;
  /** Sum over days of the unique counts (a sanity check against the device count). */
  uniqueTotal: number;
}

function batchOf(from: number, to: number, a: UniqueArgs, start: number, r: () => number): unknown[] {
  const out: unknown[] = [];
  for (let i = from; i < to; i++) {
    const device = Math.floor(r() * a.devices);
    const linked = device % 2 === 0;
    const props: Record<string, unknown> = {
      time: start + Math.floor(r() * a.days * DAY),
      $device_id: `dev-${device}`,
      $insert_id: `u-${i}`,
      plan: device % 3 ? 'pro' : 'free',
    };
    // Devices with an even number belong to user (device / 4): two devices per user; one event in ten carries the link.
    if (linked && r() < 0.1) props.$user_id = `user-${Math.floor(device / 4)}`;
    out.push({ event: i % 4 ? 'Page View' : 'Purchase', properties: props });
  }
  return out;
}

export async function uniqueSegmentation(a: UniqueArgs): Promise<UniqueResult> {
  const o = await openBenchStore(a.kind, a.target);
  const store = benchEventStore(o.db);
  const start = Math.floor(Date.now() / DAY) * DAY - a.days * DAY;
  const r = rng(7);
  const t0 = performance.now();
  for (let i = 0; i < a.events; i += BATCH) {
    await ingestEvents(store, o.projectId, 'import', batchOf(i, Math.min(a.events, i + BATCH), a, start, r), { strict: false });
  }
  const seedSeconds = (performance.now() - t0) / 1000;

  const key = crypto.createHash('sha256').update('bench').digest('hex');
  const config = configFrom({ NODE_ENV: 'test', PORT: 0, HOST: '127.0.0.1', DATABASE_URL: o.url, SECRETS_KEY: key, LOG_LEVEL: 'silent', QUEUE_PREFIX: `bench-${crypto.randomBytes(4).toString('hex')}` });
  const queues = new JobQueues(createRedisConnections({ ...config, REDIS_URL: a.redisUrl }));
  const app = createApp({ config, db: o.db, events: store, log: silentLogger, auth: new Authenticator(o.db), secrets: createSecretBox(secretsKeyFrom(key)), queues, readiness: [] });
  const server = await listen(app, config);
  const sa = await createServiceAccount(o.db, { username: 'bench-reader', projectId: o.projectId, role: 'analyst' });
  const auth = `Basic ${Buffer.from(`${sa.username}:${sa.secret}`).toString('base64')}`;
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const url = (type: string) =>
    `http://127.0.0.1:${server.port}/api/2.0/segmentation?project_id=${o.projectId}&from_date=${day(start)}&to_date=${day(start + (a.days - 1) * DAY)}&unit=day&type=${type}`;
  const time = async (type: string) => {
    let best = Infinity;
    let body: { data: { values: Record<string, Record<string, number>> } } | undefined;
    for (let k = 0; k < a.repeats; k++) {
      const q0 = performance.now();
      const res = await fetch(url(type), { headers: { authorization: auth } });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`segmentation type=${type}: ${res.status} ${text.slice(0, 300)}`);
      best = Math.min(best, performance.now() - q0);
      body = JSON.parse(text);
    }
    return { ms: best, body: body! };
  };
  const unique = await time('unique');
  const general = await time('general');
  let uniqueTotal = 0;
  for (const row of Object.values(unique.body.data.values)) for (const v of Object.values(row)) uniqueTotal += v;
  await server.close();
  await queues.close();
  await o.close();
  return { seedSeconds, uniqueMs: unique.ms, generalMs: general.ms, uniqueTotal };
}
