/**
 * The one place that reads the environment. `loadConfig()` turns it into a typed, frozen Config
 * at boot and fails fast with a readable message; everything else receives the slice it needs.
 */
import { z } from 'zod';

const int = (def: number) => z.coerce.number().int().nonnegative().default(def);

export const configSchema = z.object({
  /** `production` requires SECRETS_KEY; `development` also lets the dashboard run without operator credentials. */
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('0.0.0.0'),
  /** `postgres://…` for PostgreSQL; otherwise a SQLite file path (optionally `sqlite:` prefixed). */
  DATABASE_URL: z.string().default('./data/analytics.sqlite'),
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  /** Prefix of every BullMQ key; tests use a unique one each so they never see each other's jobs. */
  QUEUE_PREFIX: z.string().default('analytics'),
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
  /** Largest lookup-table CSV accepted by PUT /lookup-tables/{id}, in decompressed bytes (413 beyond). */
  LOOKUP_TABLE_MAX_BYTES: int(100 * 1024 * 1024),
  /** Events per second per project, sustained; bursts up to RATE_LIMIT_BURST events. 0 disables. */
  RATE_LIMIT_EVENTS_PER_SEC: int(30000),
  RATE_LIMIT_BURST: int(120000),
  /**
   * Worker threads that inflate, parse and validate /import bodies off the writer's thread; 0 =
   * inline. Unset: 1 on SQLite (frees the single writer's thread), 0 on Postgres (the database
   * does the writing; a worker only adds copying — see docs/ingestion.md).
   */
  INGEST_WORKERS: z.coerce.number().int().nonnegative().optional(),
  /** /import bodies (as sent, compressed or not) smaller than this are prepared inline: a hop costs more. */
  INGEST_WORKER_MIN_BYTES: int(16 * 1024),

  WORKER_CONCURRENCY: int(2),
  /** Seconds between reconciler passes (re-enqueue runs SQL has but Redis lost). */
  RECONCILE_INTERVAL_SEC: int(30),
  SHUTDOWN_TIMEOUT_MS: int(25000),
  UPLOAD_DIR: z.string().default('./data/uploads'),
  BATCH_IMPORT_MAX_BYTES: int(2 * 1024 * 1024 * 1024),
  /** Job lock time-to-live; a worker killed with -9 has its job picked up again about this long after. */
  JOB_LOCK_MS: z.coerce.number().int().min(1000).default(30000),
  /** How often a job may lose its worker (kill -9, OOM) before BullMQ fails it; the reconciler re-enqueues it anyway. */
  JOB_MAX_STALLED_COUNT: int(3),
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
  MIGRATION_TMP_DIR: z.string().default('./data/migrations'),
  /** Amplitude records committed per transaction (with their checkpoint) while loading a migration. */
  MIGRATION_BATCH_EVENTS: int(5000),
  /** Retries of one Amplitude export request on 429/5xx/network errors before the job itself retries. */
  MIGRATION_HTTP_RETRIES: int(6),
  /** First backoff of those retries, doubled each time (capped at 60 s); Retry-After wins when sent. */
  MIGRATION_RETRY_BASE_MS: int(1000),
  /** Worker threads that decode migration archives beside the writer (0: decode inline on the job's thread). */
  MIGRATION_DECODE_THREADS: int(2),

  /** Largest experiments API request body in bytes (after gzip); larger ones get 413. */
  EXPERIMENTS_MAX_BODY_BYTES: int(1024 * 1024),

  /** Warehouse syncs: source rows per committed batch (each batch commits with the run's checkpoint). */
  WAREHOUSE_BATCH_SIZE: z.coerce.number().int().min(1).max(100000).default(2000),
  /** Comma-separated directories SQLite warehouse sources must live in; empty = any path (but never this service's own database). */
  WAREHOUSE_SQLITE_ALLOWED_DIRS: z.string().default(''),
  /** A lookup-table sync builds the whole table as CSV before the all-or-nothing replace; larger tables fail the run. */
  WAREHOUSE_LOOKUP_MAX_BYTES: int(100 * 1024 * 1024),
  /**
   * Events syncs: read, map and validate on a worker thread, overlapping the writer (`auto`: for
   * syncs of 20,000 rows or more; `on`: always; `off`: never, all on the job's own thread).
   */
  WAREHOUSE_READER_THREAD: z.enum(['auto', 'on', 'off']).default('auto'),
  /** Scheduler process: seconds between re-reads of the imports' schedules (new, changed, paused, deleted imports). */
  SCHEDULER_REFRESH_SEC: z.coerce.number().positive().default(30),
  /** Time zone the scheduler evaluates hourly/daily/weekly and cron schedules in. */
  SCHEDULER_TIMEZONE: z.string().default('UTC'),

  /** Which processes `npm start` runs in one process. */
  START_PROCESSES: z.string().default('release,web,worker,scheduler'),
});

export type Config = Readonly<z.infer<typeof configSchema>>;

export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') picked[key] = value;
  }
  const parsed = configSchema.safeParse(picked);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const config = parsed.data;
  if (config.NODE_ENV === 'production' && !config.SECRETS_KEY) {
    throw new ConfigError('Invalid configuration:\n  SECRETS_KEY: required in production (64 hex chars)');
  }
  return Object.freeze(config);
}

/** Test and tooling helper: a Config from explicit values on top of the defaults. */
export function configFrom(overrides: Partial<Record<keyof z.infer<typeof configSchema>, string | number | boolean>>): Config {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) env[k] = String(v);
  return loadConfig(env);
}
