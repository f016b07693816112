/**
 * `/import` measured from outside, as users run it: a fresh store, `npm start` on it
 * (service-process.ts), and a separate client process (ingest-client.ts) posting 2000-event gzip
 * batches over keep-alive connections. The rate is the client's: first request sent to last
 * answer received; every answer must be a 200, and the store must then hold exactly the events.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { createServiceAccount } from '../src/accounts/accounts.service.js';
import { dropEventStore } from '../src/store/clickhouse/clickhouse-migrate.js';
import { withDatabase } from '../src/store/clickhouse/clickhouse-url.js';
import { createEventStore } from '../src/store/create-event-store.js';
import { openBenchStore, type BenchStore } from './bench-store.js';
import { runClientProcess } from './client-process.js';
import type { StoreKind } from './floors.js';
import { startService } from './service-process.js';
import { storeServerCpu } from './store-server-cpu.js';

export const BATCH = 2000;

export interface ServiceArgs {
  kind: StoreKind;
  n: number;
  tmpDir: string;
  pgUrl?: string;
  clickhouseUrl?: string;
  redisUrl: string;
  clients: number;
  /** Events carry $device_id / $user_id (ingest-data.ts). */
  identity?: boolean;
  /** Distinct users in the events (two devices each with `identity`); ingest-data.ts's default when absent. */
  users?: number;
  /** The project's ID merge system: `original` turns the identity rules off. */
  idMerge?: 'simplified' | 'original';
  /** Extra environment for the service (e.g. INGEST_WORKERS). */
  env?: Record<string, string>;
}

export interface ServiceResult {
  events: number;
  seconds: number;
  stored: number;
  /** CPU time of the whole service process tree per event, µs. */
  serverCpuUsPerEvent: number;
  /** The store server's CPU per event, µs (PostgreSQL, ClickHouse), where /proc shows it. */
  storeCpuUsPerEvent?: number;
  /** CPU time of the service's main thread (the SQLite writer, HTTP) per event, µs; the rest is its workers' and V8's. */
  mainThreadCpuUsPerEvent: number;
  serverPeakRssMb: number;
}

interface ClientOutcome {
  seconds: number;
  failures: number;
  firstError?: string;
}

export async function serviceImport(args: ServiceArgs): Promise<ServiceResult> {
  const tag = crypto.randomBytes(4).toString('hex');
  // Accounts and runs: SQLite, or a scratch Postgres schema when events live there too.
  const accounts: BenchStore =
    args.kind === 'postgres' ? await openBenchStore('postgres', args.pgUrl!) : await openBenchStore('sqlite', path.join(args.tmpDir, `service-${tag}.sqlite`));
  const eventStoreUrl = args.kind === 'clickhouse' ? withDatabase(args.clickhouseUrl!, `bench_${tag}`) : undefined;
  const sa = await createServiceAccount(accounts.db, { username: 'bench', projectId: accounts.projectId, role: 'owner' });
  if (args.idMerge) await accounts.db('projects').where({ id: accounts.projectId }).update({ id_merge: args.idMerge });
  const service = await startService(
    {
      NODE_ENV: 'production',
      SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
      ADMIN_USERNAME: 'bench',
      ADMIN_PASSWORD: crypto.randomBytes(12).toString('hex'),
      DATABASE_URL: accounts.url,
      ...(eventStoreUrl ? { EVENT_STORE_URL: eventStoreUrl } : {}),
      REDIS_URL: args.redisUrl,
      QUEUE_PREFIX: `bench-${tag}`,
      LOG_LEVEL: 'info',
      // The limiter stays on the hot path, set above what this machine can take in.
      RATE_LIMIT_EVENTS_PER_SEC: '10000000',
      RATE_LIMIT_BURST: '10000000',
      ...args.env,
    },
    path.join(args.tmpDir, `service-${tag}.log`),
  );
  let outcome: ClientOutcome;
  let cpu: number;
  let mainCpu: number;
  let storeCpu: number | undefined;
  let peakRssMb: number;
  const storeServer = args.kind === 'sqlite' ? undefined : storeServerCpu(args.kind, args.kind === 'postgres' ? args.pgUrl! : args.clickhouseUrl!);
  try {
    const store0 = storeServer?.();
    const cpu0 = service.cpuSeconds();
    const main0 = service.mainThreadCpuSeconds();
    const from = process.hrtime.bigint() / 1000n;
    outcome = await runClientProcess<ClientOutcome>('ingest-client.ts', {
      url: `${service.url}/import?project_id=${accounts.projectId}&strict=1`,
      authorization: `Basic ${Buffer.from(`${sa.username}:${sa.secret}`).toString('base64')}`,
      n: args.n,
      batch: BATCH,
      clients: args.clients,
      identity: args.identity,
      users: args.users,
    });
    cpu = service.cpuSeconds() - cpu0;
    mainCpu = service.mainThreadCpuSeconds() - main0;
    if (storeServer) storeCpu = storeServer() - store0!;
    // The load's window on the monotonic clock V8's profiles use (profile-summary.ts filters by it).
    if (process.env.BENCH_CPU_PROF_DIR) process.stderr.write(`[bench] profile window (µs): ${from} ${process.hrtime.bigint() / 1000n}\n`);
    peakRssMb = service.peakRssMb();
  } finally {
    await service.stop();
  }
  const events = createEventStore({ EVENT_STORE_URL: eventStoreUrl }, accounts.db);
  const stored = await events.count(accounts.projectId);
  await events.close();
  if (eventStoreUrl) await dropEventStore({ EVENT_STORE_URL: eventStoreUrl });
  await accounts.close();
  if (outcome.failures > 0) throw new Error(`${outcome.failures} /import requests failed: ${outcome.firstError}`);
  return { events: args.n, seconds: outcome.seconds, stored, serverCpuUsPerEvent: (cpu * 1e6) / args.n, mainThreadCpuUsPerEvent: (mainCpu * 1e6) / args.n, serverPeakRssMb: peakRssMb, ...(storeCpu === undefined ? {} : { storeCpuUsPerEvent: (storeCpu * 1e6) / args.n }) };
}
