/**
 * The one place that reads the environment. `loadConfig()` turns it into a typed, frozen Config
 * at boot and fails fast with a readable message; everything else receives the slice it needs.
 */
import { z } from 'zod';
import { parseAllowedHosts } from '../src/domain/reach-rules.js';

function allowedHostsProblem(text: string): string | undefined {
  try {
    parseAllowedHosts(text);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

const int = (def: number) => z.coerce.number().int().nonnegative().default(def);

/** Also what createDb uses when a caller passes only DATABASE_URL (tools, benches). */
export const SQLITE_CACHE_MB_DEFAULT = 64;

/** `host:port,…` → the cluster's seed nodes, validated once here. */
const redisClusterNodes = z
  .string()
  .default('')
  .transform((raw, ctx) => {
    const nodes: { host: string; port: number }[] = [];
    for (const part of raw.split(',').map((p) => p.trim()).filter(Boolean)) {
      const m = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(part);
      const port = m ? Number(m[2]) : NaN;
      if (!m || port < 1 || port > 65535) {
        ctx.addIssue({ code: 'custom', message: `'${part}' is not host:port` });
        return z.NEVER;
      }
      nodes.push({ host: m[1]!.replace(/^\[|\]$/g, ''), port });
    }
    return nodes;
  });

export const configSchema = z.object({
  /**
   * `production` (the default) requires SECRETS_KEY. `development` is asked for (`npm start` and
   * `npm run cli` set it unless NODE_ENV is given): it falls back to a published development
   * SECRETS_KEY and opens the operator dashboard without credentials, and says so at start.
   */
  NODE_ENV: z.enum(['development', 'production', 'test']).default('production'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('0.0.0.0'),
  /** `postgres://…` for PostgreSQL; otherwise a SQLite file path (optionally `sqlite:` prefixed). */
  DATABASE_URL: z.string().default('./data/analytics.sqlite'),
  /**
   * SQLite's page cache per connection, in MB (SQLite's own default is 2). Events with random
   * insert ids (UUIDs, as SDKs send) touch pages all over the dedupe index; 64 MB inserted 1M
   * such rows 15–28 % faster than 2 MB (docs/performance.md). Grows only as pages are read.
   */
  SQLITE_CACHE_MB: int(SQLITE_CACHE_MB_DEFAULT),
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  /**
   * `host:port,host:port,…` of a Redis Cluster's seed nodes: every queue, flow, lock and
   * readiness check then uses the cluster and REDIS_URL is never dialled. Empty: plain Redis.
   */
  REDIS_CLUSTER_NODES: redisClusterNodes,
  /** Password of the Redis Cluster nodes (AUTH); plain Redis takes it in REDIS_URL instead. */
  REDIS_PASSWORD: z.string().optional(),
  /**
   * Names a deployment's keys (several deployments may share one Redis). On a cluster it is
   * wrapped in a hash tag (`{analytics}`) so each queue's keys, and a flow's parent and children,
   * share a slot; already braced values are kept as given. Tests use a unique one each.
   */
  QUEUE_PREFIX: z.string().regex(/^\S+$/, 'no whitespace').default('analytics'),
  /**
   * Where events live. Unset: in DATABASE_URL (SQLite or PostgreSQL). `clickhouse://user:password@host:8123/database`
   * (`clickhouses://` for HTTPS): events, identity links and the reports over them in ClickHouse;
   * accounts, imports, runs and experiments stay in DATABASE_URL. See docs/scaling.md.
   */
  EVENT_STORE_URL: z
    .string()
    .regex(/^clickhouses?:\/\//i, 'expected clickhouse://user:password@host:8123/database')
    .optional(),
  /** ClickHouse cluster name (remote_servers): events go through Distributed tables over its shards. */
  EVENT_STORE_CLUSTER: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a cluster name from remote_servers (letters, digits, _)')
    .optional(),
  /** With EVENT_STORE_CLUSTER: every shard node as clickhouse://… (comma-separated), where `release` creates the tables. */
  EVENT_STORE_SHARD_URLS: z.string().optional(),
  /**
   * ClickHouse: properties that get a segment column of their own, comma-separated (`release`
   * adds them). Unset: Mixpanel's usual segmentation properties; empty: none. docs/scaling.md.
   */
  EVENT_STORE_HOT_PROPERTIES: z.string().optional(),
  REGION: z.enum(['US', 'EU', 'IN']).default('US'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  BASE_URL: z.string().default('http://localhost:8080/api/app'),
  INGEST_URL: z.string().default('http://localhost:8080'),
  MIGRATE_URL: z.string().default('http://localhost:8080/migrate'),

  ADMIN_USERNAME: z.string().optional(),
  ADMIN_PASSWORD: z.string().optional(),
  /** 32 bytes as 64 hex chars or base64; encrypts stored source credentials. */
  SECRETS_KEY: z.string().optional(),

  TLS_CERT_FILE: z.string().optional(),
  TLS_KEY_FILE: z.string().optional(),

  IMPORT_MAX_EVENTS: int(2000),
  IMPORT_MAX_BYTES: int(10 * 1024 * 1024),
  IMPORT_MAX_EVENT_BYTES: int(1024 * 1024),
  IMPORT_MAX_PROPERTIES: int(255),
  IMPORT_MAX_DEPTH: int(3),
  ENGAGE_MAX_UPDATES: int(2000),
  /** Longest from_date..to_date span (days, inclusive) a segmentation/insights report may ask for (400 beyond). */
  QUERY_MAX_RANGE_DAYS: int(1830),
  /** Largest lookup-table CSV accepted by PUT /lookup-tables/{id}, in decompressed bytes (413 beyond). */
  LOOKUP_TABLE_MAX_BYTES: int(100 * 1024 * 1024),
  /** Events per second per project, sustained; bursts up to RATE_LIMIT_BURST events. 0 disables. */
  RATE_LIMIT_EVENTS_PER_SEC: int(30000),
  RATE_LIMIT_BURST: int(120000),
  /**
   * Worker threads that inflate, parse and validate /import bodies off the writer's thread; 0 =
   * inline. Unset: 1, or 2 when events live in ClickHouse (importWorkerCount; docs/ingestion.md).
   */
  INGEST_WORKERS: z.coerce.number().int().nonnegative().optional(),
  /** /import bodies (as sent, compressed or not) smaller than this are prepared inline: a hop costs more. */
  INGEST_WORKER_MIN_BYTES: int(16 * 1024),

  WORKER_CONCURRENCY: int(2),
  /**
   * A queue's worker that has nothing running and starts nothing for this long while jobs wait
   * in its queue is replaced by a new one (its fetch loop wedged, as BullMQ's can after a Redis
   * outage); 0 = never. Checked every sixth of it.
   */
  WORKER_FETCH_WATCHDOG_MS: int(30000),
  /** Seconds between reconciler passes (re-enqueue runs SQL has but Redis lost). */
  RECONCILE_INTERVAL_SEC: int(30),
  SHUTDOWN_TIMEOUT_MS: int(25000),
  UPLOAD_DIR: z.string().default('./data/uploads'),
  BATCH_IMPORT_MAX_BYTES: int(2 * 1024 * 1024 * 1024),
  /** Longest single record of a batch-import file (line, array element, CSV row), in bytes; 413 naming the record beyond. */
  BATCH_IMPORT_MAX_RECORD_BYTES: z.coerce.number().int().positive().default(10 * 1024 * 1024),
  /** Job lock time-to-live; a worker killed with -9 has its job picked up again about this long after. */
  JOB_LOCK_MS: z.coerce.number().int().min(1000).default(30000),
  /** How often a job may lose its worker (kill -9, OOM) before BullMQ fails it; the reconciler re-enqueues it anyway. */
  JOB_MAX_STALLED_COUNT: int(3),
  /**
   * A job that meets an outage of our own stores (database, event store) waits it out without
   * using an attempt: first after this long, doubling up to 12× (src/store/store-outage.ts).
   */
  JOB_OUTAGE_RETRY_MS: z.coerce.number().int().min(10).default(5000),
  /** Worker process: serve /metrics (jobs_total, …) on this port; 0 = off (all-in-one serves them from web). */
  WORKER_METRICS_PORT: int(0),

  /**
   * Snowflake sources reach `https://<account>.snowflakecomputing.com` (private link: an account
   * identifier like `xy12345.us-east-1.privatelink`). A source's `access_url` overrides that only
   * when it is one of these comma-separated origins (e.g. `http://127.0.0.1:4455` for the test
   * stand-in, or a private-link proxy), so users cannot point the server at arbitrary hosts.
   * Empty (the default): `access_url` is refused.
   */
  SNOWFLAKE_ALLOWED_ACCESS_URLS: z.string().default(''),
  /** Give up on a Snowflake login (network or host trouble) after this long. */
  SNOWFLAKE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(1000).default(30000),

  AMPLITUDE_US_URL: z.string().default('https://amplitude.com'),
  AMPLITUDE_EU_URL: z.string().default('https://analytics.eu.amplitude.com'),
  MIGRATION_MAX_EVENTS: int(15_000_000),
  /**
   * `true`: POST /migrate also needs the project secret or an owner/admin service account in
   * Authorization (Basic), not just the project token in the body. Default off, as Mixpanel's.
   */
  MIGRATION_REQUIRE_AUTH: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .transform((v) => v === 'true' || v === '1'),
  MIGRATION_TMP_DIR: z.string().default('./data/migrations'),
  /** Amplitude records committed per transaction (with their checkpoint) while loading a migration. */
  MIGRATION_BATCH_EVENTS: int(5000),
  /** Retries of one Amplitude export request on 429/5xx/network errors before the job itself retries. */
  MIGRATION_HTTP_RETRIES: int(6),
  /** First backoff of those retries, doubled each time (capped at 60 s); Retry-After wins when sent. */
  MIGRATION_RETRY_BASE_MS: int(1000),
  /** Worker threads that decode migration archives beside the writer (0: decode inline on the job's thread). */
  MIGRATION_DECODE_THREADS: int(2),
  /**
   * Migration jobs (days) one worker process runs at once, in place of WORKER_CONCURRENCY for
   * that queue. More days than decoder threads: while one day's batches are written, the next
   * days decode (a thread is free again once its day is decoded), so neither the writer nor the
   * decoders wait for each other at day boundaries.
   */
  MIGRATION_DAY_CONCURRENCY: int(4),

  /** Largest experiments API request body in bytes (after gzip); larger ones get 413. */
  EXPERIMENTS_MAX_BODY_BYTES: int(1024 * 1024),

  /**
   * Large runs: a sync over this many source rows is split into partitions of at most about this
   * many rows (key or time ranges pushed down to the source), each its own job any worker takes.
   */
  SYNC_PARTITION_ROWS: z.coerce.number().int().min(1).default(250_000),
  /**
   * Warehouse syncs: source rows per committed batch (each batch commits with the run's
   * checkpoint). 10,000: a SQLite commit costs about as much as the inserts it closes, and syncs
   * ran ~18 % faster than at 2,000, for ~200 MB more peak RSS per running sync (2,000 restores
   * the smaller footprint; docs/performance.md, fifteenth session).
   */
  WAREHOUSE_BATCH_SIZE: z.coerce.number().int().min(1).max(100000).default(10_000),
  /**
   * Comma-separated directories SQLite warehouse sources must live in (symlinks and `..` are
   * resolved before the check); never this service's own database. Default: ./data/warehouses
   * and the bundled example's directory.
   */
  WAREHOUSE_SQLITE_ALLOWED_DIRS: z.string().default('./data/warehouses,./examples'),
  /**
   * What network warehouse sources may reach: comma-separated hosts, host:port or CIDR ranges;
   * when set, only those. Unset: anything except loopback, link-local, Unix sockets and this
   * service's own database, Redis and event store. Checked on the resolved address at connect time.
   */
  WAREHOUSE_ALLOWED_HOSTS: z
    .string()
    .default('')
    .superRefine((s, ctx) => {
      const problem = allowedHostsProblem(s);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  /**
   * The longest a warehouse source may take over one step of a read (a connection test, a schema
   * lookup, a count, the next batch of rows); beyond it the statement is cancelled and the run
   * fails for good (a query that slow is not fixed by retrying it).
   */
  WAREHOUSE_READ_TIMEOUT_MS: z.coerce.number().int().min(100).default(300_000),
  /** A lookup-table sync builds the whole table as CSV before the all-or-nothing replace; larger tables fail the run. */
  WAREHOUSE_LOOKUP_MAX_BYTES: int(100 * 1024 * 1024),
  /**
   * Events syncs: read, map and validate on a worker thread, overlapping the writer (`auto`: for
   * syncs of 20,000 rows or more; `on`: always; `off`: never, all on the job's own thread).
   */
  WAREHOUSE_READER_THREAD: z.enum(['auto', 'on', 'off']).default('auto'),
  /** New manual syncs per import in any rolling hour (429 with Retry-After beyond; 0 = no limit). Returning an active sync does not count. */
  MANUAL_SYNC_PER_HOUR: int(5),
  /** Scheduler process: seconds between re-reads of the imports' schedules (new, changed, paused, deleted imports). */
  SCHEDULER_REFRESH_SEC: z.coerce.number().positive().default(30),
  /** Time zone the scheduler evaluates hourly/daily/weekly and cron schedules in. */
  SCHEDULER_TIMEZONE: z.string().default('UTC'),

  /** Which processes `npm start` runs in one process. */
  START_PROCESSES: z.string().default('release,web,worker,scheduler'),
});

export type Config = Readonly<z.infer<typeof configSchema>>;

export class ConfigError extends Error {}

/** Variables whose empty value means something of its own (not "unset, take the default"). */
const EMPTY_IS_A_VALUE: ReadonlySet<string> = new Set(['EVENT_STORE_HOT_PROPERTIES']);

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const value = env[key];
    if (value !== undefined && (value !== '' || EMPTY_IS_A_VALUE.has(key))) picked[key] = value;
  }
  const parsed = configSchema.safeParse(picked);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const config = parsed.data;
  if (config.NODE_ENV === 'production' && !config.SECRETS_KEY) {
    throw new ConfigError(
      'Invalid configuration:\n  SECRETS_KEY: required in production, the default NODE_ENV: set it to 64 hex chars (openssl rand -hex 32), ' +
        'or set NODE_ENV=development for a local demo on the published development key',
    );
  }
  return Object.freeze(config);
}

/** Test and tooling helper: a Config from explicit values on top of the defaults (NODE_ENV `test` unless given). */
export function configFrom(overrides: Partial<Record<keyof z.infer<typeof configSchema>, string | number | boolean>>): Config {
  const env: Record<string, string> = { NODE_ENV: 'test' };
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) env[k] = String(v);
  return loadConfig(env);
}
