/**
 * The one place that reads the environment. `loadConfig()` turns it into a typed, frozen Config
 * at boot and fails fast with a readable message; everything else receives the slice it needs.
 */
import { z } from 'zod';
import { parseDatabaseUrl } from '../src/domain/database-url.js';
import { parseAllowedHosts } from '../src/domain/reach-rules.js';

function allowedHostsProblem(text: string): string | undefined {
  try {
    parseAllowedHosts(text);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Node turns a timer longer than this into 1 ms (TimeoutOverflowWarning), so no delay may exceed it. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A whole number written in decimal digits (surrounding blanks allowed). z.coerce.number() took
 * ' ' as 0 and '0x1F90' as 8080; anything else stays a string here, which z.number() refuses.
 */
const decimal = (v: unknown) => (typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : v);
/** Like `decimal`, with a fraction allowed (`0.5` seconds). */
const decimalFraction = (v: unknown) => (typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v) ? Number(v) : v);
const NOT_DECIMAL = { error: 'expected a whole number in decimal digits' } as const;

/** An integer variable within [min, max] (default: 0 and no upper bound beyond a safe integer). */
function wholeNumber(min = 0, max = Number.MAX_SAFE_INTEGER, why = '') {
  return z.preprocess(
    decimal,
    z
      .number(NOT_DECIMAL)
      .int(NOT_DECIMAL)
      .min(min, `must be at least ${min}`)
      .max(max, `must be at most ${max}${why}`),
  );
}

const int = (def: number) => wholeNumber().default(def);
/** A TCP port; 0 = let the OS pick (PORT) or off (WORKER_METRICS_PORT). */
const port = (def: number) => wholeNumber(0, 65535).default(def);
const LONGEST_TIMER = ' (2^31-1 ms, the longest Node timer)';
const MAX_TIMER_SEC = Math.floor(MAX_TIMER_MS / 1000);
/** Milliseconds that end up in a Node timer (setTimeout, BullMQ locks and delays). */
const ms = (def: number, min = 0) => wholeNumber(min, MAX_TIMER_MS, LONGEST_TIMER).default(def);
/** Seconds that end up in a Node timer as seconds × 1000. */
const timerSeconds = (def: number) =>
  z.preprocess(decimalFraction, z.number(NOT_DECIMAL).positive().max(MAX_TIMER_SEC, `must be at most ${MAX_TIMER_SEC}${LONGEST_TIMER}`)).default(def);

/** The processes `npm start` can run in one process (src/bin/all-in-one.ts). */
export const START_PROCESS_NAMES = ['release', 'web', 'worker', 'scheduler'] as const;
export type StartProcess = (typeof START_PROCESS_NAMES)[number];

const startProcesses = z
  .string()
  .default(START_PROCESS_NAMES.join(','))
  .transform((raw, ctx) => {
    const names = raw.split(',').map((p) => p.trim()).filter(Boolean);
    const unknown = names.filter((n) => !(START_PROCESS_NAMES as readonly string[]).includes(n));
    if (unknown.length > 0 || names.length === 0) {
      ctx.addIssue({ code: 'custom', message: `${unknown.length > 0 ? `unknown ${unknown.map((n) => `'${n}'`).join(', ')}` : 'empty'}: a comma-separated subset of ${START_PROCESS_NAMES.join(', ')}` });
      return z.NEVER;
    }
    return [...new Set(names)] as StartProcess[];
  });

/** DATABASE_URL's forms (src/domain/database-url.ts), the scheme lower-cased; another `scheme://` is refused. */
const databaseUrl = z
  .string()
  .default('./data/analytics.sqlite')
  .transform((raw, ctx) => {
    const parsed = parseDatabaseUrl(raw);
    if ('url' in parsed) return parsed.url;
    ctx.addIssue({ code: 'custom', message: `unsupported scheme '${parsed.unsupported}://': use postgres:// (or postgresql://) for PostgreSQL, or a SQLite file path (optionally sqlite:)` });
    return z.NEVER;
  });

/** An IANA time zone (`UTC`, `Europe/Berlin`): an unknown one made every schedule fail silently. */
const timeZone = z
  .string()
  .default('UTC')
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat(undefined, { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, 'not a time zone Intl knows (an IANA name such as UTC or Europe/Berlin)');

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
  PORT: port(8080),
  HOST: z.string().default('0.0.0.0'),
  /** `postgres://…` / `postgresql://…` for PostgreSQL; otherwise a SQLite file path (optionally `sqlite:` prefixed). */
  DATABASE_URL: databaseUrl,
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
  INGEST_WORKERS: wholeNumber().optional(),
  /** /import bodies (as sent, compressed or not) smaller than this are prepared inline: a hop costs more. */
  INGEST_WORKER_MIN_BYTES: int(16 * 1024),

  /** At least 1: a worker with 0 ran 1 anyway (BullMQ's minimum). */
  WORKER_CONCURRENCY: wholeNumber(1).default(2),
  /**
   * A queue's worker that has nothing running and starts nothing for this long while jobs wait
   * in its queue is replaced by a new one (its fetch loop wedged, as BullMQ's can after a Redis
   * outage); 0 = never. Checked every sixth of it.
   */
  WORKER_FETCH_WATCHDOG_MS: ms(30000),
  /** Seconds between reconciler passes (re-enqueue runs SQL has but Redis lost). */
  RECONCILE_INTERVAL_SEC: wholeNumber(0, MAX_TIMER_SEC, LONGEST_TIMER).default(30),
  SHUTDOWN_TIMEOUT_MS: ms(25000),
  UPLOAD_DIR: z.string().default('./data/uploads'),
  BATCH_IMPORT_MAX_BYTES: int(2 * 1024 * 1024 * 1024),
  /** Longest single record of a batch-import file (line, array element, CSV row), in bytes; 413 naming the record beyond. */
  BATCH_IMPORT_MAX_RECORD_BYTES: wholeNumber(1).default(10 * 1024 * 1024),
  /** Job lock time-to-live; a worker killed with -9 has its job picked up again about this long after. */
  JOB_LOCK_MS: ms(30000, 1000),
  /** How often a job may lose its worker (kill -9, OOM) before BullMQ fails it; the reconciler re-enqueues it anyway. */
  JOB_MAX_STALLED_COUNT: int(3),
  /**
   * A job that meets an outage of our own stores (database, event store) waits it out without
   * using an attempt: first after this long, doubling up to 12× (src/store/store-outage.ts).
   */
  JOB_OUTAGE_RETRY_MS: wholeNumber(10, Math.floor(MAX_TIMER_MS / 12), ' (it grows to 12× that, and 2^31-1 ms is the longest Node timer)').default(5000),
  /** Worker process: serve /metrics (jobs_total, …) on this port; 0 = off (all-in-one serves them from web). */
  WORKER_METRICS_PORT: port(0),

  /**
   * Snowflake sources reach `https://<account>.snowflakecomputing.com` (private link: an account
   * identifier like `xy12345.us-east-1.privatelink`). A source's `access_url` overrides that only
   * when it is one of these comma-separated origins (e.g. `http://127.0.0.1:4455` for the test
   * stand-in, or a private-link proxy), so users cannot point the server at arbitrary hosts.
   * Empty (the default): `access_url` is refused.
   */
  SNOWFLAKE_ALLOWED_ACCESS_URLS: z.string().default(''),
  /** Give up on a Snowflake login (network or host trouble) after this long. */
  SNOWFLAKE_CONNECT_TIMEOUT_MS: ms(30000, 1000),

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
  MIGRATION_RETRY_BASE_MS: ms(1000),
  /** Worker threads that decode migration archives beside the writer (0: decode inline on the job's thread). */
  MIGRATION_DECODE_THREADS: int(2),
  /**
   * Migration jobs (days) one worker process runs at once, in place of WORKER_CONCURRENCY for
   * that queue. More days than decoder threads: while one day's batches are written, the next
   * days decode (a thread is free again once its day is decoded), so neither the writer nor the
   * decoders wait for each other at day boundaries.
   */
  MIGRATION_DAY_CONCURRENCY: wholeNumber(1).default(4),

  /** Largest experiments API request body in bytes (after gzip); larger ones get 413. */
  EXPERIMENTS_MAX_BODY_BYTES: int(1024 * 1024),

  /**
   * Large runs: a sync over this many source rows is split into partitions of at most about this
   * many rows (key or time ranges pushed down to the source), each its own job any worker takes.
   */
  SYNC_PARTITION_ROWS: wholeNumber(1).default(250_000),
  /**
   * Warehouse syncs: source rows per committed batch (each batch commits with the run's
   * checkpoint). 10,000: a SQLite commit costs about as much as the inserts it closes, and syncs
   * ran ~18 % faster than at 2,000, for ~200 MB more peak RSS per running sync (2,000 restores
   * the smaller footprint; docs/performance.md, fifteenth session).
   */
  WAREHOUSE_BATCH_SIZE: wholeNumber(1, 100000).default(10_000),
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
  WAREHOUSE_READ_TIMEOUT_MS: ms(300_000, 100),
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
  SCHEDULER_REFRESH_SEC: timerSeconds(30),
  /** Time zone the scheduler evaluates hourly/daily/weekly and cron schedules in. */
  SCHEDULER_TIMEZONE: timeZone,

  /** Which processes `npm start` runs in one process (`release` alone: migrate and exit). */
  START_PROCESSES: startProcesses,
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
  const problems = crossChecks(config);
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  return Object.freeze(config);
}

/** Rules between variables, after each parsed on its own. */
function crossChecks(config: z.infer<typeof configSchema>): string[] {
  const problems: string[] = [];
  // Only development, which announces itself, may fall back to the published key: `test` used to as well, silently.
  if (config.NODE_ENV !== 'development' && !config.SECRETS_KEY) {
    problems.push(
      `SECRETS_KEY: required in ${config.NODE_ENV === 'production' ? 'production, the default NODE_ENV' : `NODE_ENV=${config.NODE_ENV} (only development runs without it)`}: ` +
        'set it to 64 hex chars (openssl rand -hex 32), or set NODE_ENV=development for a local demo on the published development key',
    );
  }
  // One without the other used to serve plain HTTP without a word.
  if (Boolean(config.TLS_CERT_FILE) !== Boolean(config.TLS_KEY_FILE)) {
    problems.push(`TLS_CERT_FILE / TLS_KEY_FILE: HTTPS needs both; only ${config.TLS_CERT_FILE ? 'TLS_CERT_FILE' : 'TLS_KEY_FILE'} is set`);
  }
  return problems;
}

/** configFrom's SECRETS_KEY when a test or tool gives none: a fixed key that seals nothing real. */
const CONFIG_FROM_SECRETS_KEY = '7e57'.repeat(16);

/**
 * Test and tooling helper: a Config from explicit values on top of the defaults (NODE_ENV `test`
 * unless given, and outside development a fixed test SECRETS_KEY unless given). Never used by a process.
 */
export function configFrom(overrides: Partial<Record<keyof z.infer<typeof configSchema>, string | number | boolean>>): Config {
  const env: Record<string, string> = { NODE_ENV: 'test' };
  if (overrides.NODE_ENV !== 'development') env.SECRETS_KEY = CONFIG_FROM_SECRETS_KEY;
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) env[k] = String(v);
  return loadConfig(env);
}
