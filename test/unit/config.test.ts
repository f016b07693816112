import { describe, expect, it } from 'vitest';
import { ConfigError, MAX_TIMER_MS, loadConfig } from '../../config/index.js';
import { bullPrefix } from '../../src/queue/redis-connection.js';
import { parseHotProperties } from '../../src/store/clickhouse/clickhouse-hot-properties.js';

const KEY = 'ab'.repeat(32);

describe('config', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({ SECRETS_KEY: KEY });
    expect(c).toMatchObject({ NODE_ENV: 'production', MIGRATION_REQUIRE_AUTH: false, PORT: 8080, DATABASE_URL: './data/analytics.sqlite', REDIS_URL: 'redis://127.0.0.1:6379', REGION: 'US', IMPORT_MAX_EVENTS: 2000 });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('EVENT_STORE_HOT_PROPERTIES: unset means the usual segmentation properties, empty means none', () => {
    expect(parseHotProperties(loadConfig({ SECRETS_KEY: KEY }).EVENT_STORE_HOT_PROPERTIES)).toEqual(['mp_country_code', '$browser', '$os', 'utm_source']);
    expect(parseHotProperties(loadConfig({ SECRETS_KEY: KEY, EVENT_STORE_HOT_PROPERTIES: '' }).EVENT_STORE_HOT_PROPERTIES)).toEqual([]);
    // Any other empty variable is still "unset": its default applies.
    expect(loadConfig({ SECRETS_KEY: KEY, PORT: '' }).PORT).toBe(8080);
  });

  it('fails fast with a readable message naming the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ REGION: 'MARS' })).toThrow(/REGION/);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRETS_KEY/);
  });

  it('defaults to production: no SECRETS_KEY is refused unless development is asked for', () => {
    expect(() => loadConfig({})).toThrow(/SECRETS_KEY: required in production, the default NODE_ENV/);
    expect(loadConfig({ NODE_ENV: 'development' }).SECRETS_KEY).toBeUndefined();
    // `test` is not a demo mode: it used to fall back to the published key without the development banner.
    expect(() => loadConfig({ NODE_ENV: 'test' })).toThrow(/SECRETS_KEY: required in NODE_ENV=test \(only development runs without it\)/);
    expect(loadConfig({ NODE_ENV: 'test', SECRETS_KEY: KEY }).SECRETS_KEY).toBe(KEY);
    expect(loadConfig({ MIGRATION_REQUIRE_AUTH: 'true', SECRETS_KEY: KEY }).MIGRATION_REQUIRE_AUTH).toBe(true);
  });
});

describe('Redis config', () => {
  it('parses REDIS_CLUSTER_NODES once into host/port pairs; empty means plain Redis', () => {
    expect(loadConfig({ NODE_ENV: 'test', SECRETS_KEY: KEY }).REDIS_CLUSTER_NODES).toEqual([]);
    expect(loadConfig({ NODE_ENV: 'test', SECRETS_KEY: KEY, REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b.internal:7001,[::1]:7002' }).REDIS_CLUSTER_NODES).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: 'redis-b.internal', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
  });

  it('refuses a node that is not host:port, naming the variable and the node', () => {
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000,10.0.0.2' })).toThrow(/REDIS_CLUSTER_NODES: '10.0.0.2' is not host:port/);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'a:70000' })).toThrow(/REDIS_CLUSTER_NODES/);
    expect(() => loadConfig({ QUEUE_PREFIX: 'two words' })).toThrow(/QUEUE_PREFIX/);
  });

  it('keeps today\'s key prefix on plain Redis and hash-tags it on a cluster', () => {
    expect(bullPrefix('analytics', false)).toBe('analytics');
    expect(bullPrefix('analytics', true)).toBe('{analytics}');
    expect(bullPrefix('{eu-prod}', true)).toBe('{eu-prod}');
    expect(bullPrefix('acme:{eu}', true)).toBe('acme:{eu}');
    expect(bullPrefix('odd{}', true)).toBe('{odd{}}');
  });
});

/** loadConfig on a valid base (production with a key) plus `env`. */
const withKey = (env: Record<string, string>) => loadConfig({ SECRETS_KEY: KEY, ...env });

describe('config bounds and forms', () => {
  it('integer variables take decimal digits only: blanks and hex no longer become 0 or 8080', () => {
    expect(() => withKey({ PORT: ' ' })).toThrow(/PORT: expected a whole number in decimal digits/);
    expect(() => withKey({ PORT: '0x1F90' })).toThrow(/PORT: expected a whole number/);
    expect(() => withKey({ IMPORT_MAX_EVENTS: '1e3' })).toThrow(/IMPORT_MAX_EVENTS: expected a whole number/);
    expect(() => withKey({ IMPORT_MAX_EVENTS: '-1' })).toThrow(/IMPORT_MAX_EVENTS/);
    expect(withKey({ PORT: ' 9090 ' }).PORT).toBe(9090);
    expect(withKey({ SCHEDULER_REFRESH_SEC: '0.5' }).SCHEDULER_REFRESH_SEC).toBe(0.5);
    expect(() => withKey({ SCHEDULER_REFRESH_SEC: '0x10' })).toThrow(/SCHEDULER_REFRESH_SEC/);
  });

  it('every port variable is 0..65535', () => {
    expect(() => withKey({ WORKER_METRICS_PORT: '70000' })).toThrow(/WORKER_METRICS_PORT: must be at most 65535/);
    expect(() => withKey({ PORT: '65536' })).toThrow(/PORT: must be at most 65535/);
    expect(withKey({ WORKER_METRICS_PORT: '9464' }).WORKER_METRICS_PORT).toBe(9464);
  });

  it('milliseconds (and seconds) that become timers stop at 2^31-1 ms, where Node would fire after 1 ms', () => {
    for (const name of ['SHUTDOWN_TIMEOUT_MS', 'JOB_LOCK_MS', 'WORKER_FETCH_WATCHDOG_MS', 'WAREHOUSE_READ_TIMEOUT_MS', 'SNOWFLAKE_CONNECT_TIMEOUT_MS', 'MIGRATION_RETRY_BASE_MS']) {
      expect(withKey({ [name]: String(MAX_TIMER_MS) })[name as 'JOB_LOCK_MS']).toBe(MAX_TIMER_MS);
      expect(() => withKey({ [name]: String(MAX_TIMER_MS + 1) })).toThrow(new RegExp(`${name}: must be at most ${MAX_TIMER_MS}`));
    }
    expect(() => withKey({ JOB_OUTAGE_RETRY_MS: String(MAX_TIMER_MS) })).toThrow(/JOB_OUTAGE_RETRY_MS: must be at most 178956970/);
    expect(() => withKey({ RECONCILE_INTERVAL_SEC: '2147484' })).toThrow(/RECONCILE_INTERVAL_SEC: must be at most 2147483/);
    expect(() => withKey({ SCHEDULER_REFRESH_SEC: '2147484' })).toThrow(/SCHEDULER_REFRESH_SEC: must be at most 2147483/);
  });

  it('WORKER_CONCURRENCY and MIGRATION_DAY_CONCURRENCY are at least 1 (0 silently ran 1)', () => {
    expect(() => withKey({ WORKER_CONCURRENCY: '0' })).toThrow(/WORKER_CONCURRENCY: must be at least 1/);
    expect(() => withKey({ MIGRATION_DAY_CONCURRENCY: '0' })).toThrow(/MIGRATION_DAY_CONCURRENCY: must be at least 1/);
    expect(withKey({ WORKER_CONCURRENCY: '1' }).WORKER_CONCURRENCY).toBe(1);
  });

  it('SCHEDULER_TIMEZONE must be a time zone Intl knows', () => {
    expect(() => withKey({ SCHEDULER_TIMEZONE: 'Mars/Olympus' })).toThrow(/SCHEDULER_TIMEZONE: not a time zone/);
    expect(withKey({ SCHEDULER_TIMEZONE: 'Europe/Berlin' }).SCHEDULER_TIMEZONE).toBe('Europe/Berlin');
    expect(withKey({}).SCHEDULER_TIMEZONE).toBe('UTC');
  });

  it('START_PROCESSES: known names only, the valid ones listed', () => {
    expect(withKey({}).START_PROCESSES).toEqual(['release', 'web', 'worker', 'scheduler']);
    expect(withKey({ START_PROCESSES: ' web , worker' }).START_PROCESSES).toEqual(['web', 'worker']);
    expect(() => withKey({ START_PROCESSES: 'web,wroker' })).toThrow(/START_PROCESSES: unknown 'wroker': a comma-separated subset of release, web, worker, scheduler/);
    expect(() => withKey({ START_PROCESSES: ',' })).toThrow(/START_PROCESSES: empty/);
  });

  it('DATABASE_URL: a SQLite path, sqlite:, postgres:// or postgresql:// (any case); another scheme is refused', () => {
    expect(withKey({ DATABASE_URL: 'Postgres://u@h/db' }).DATABASE_URL).toBe('postgres://u@h/db');
    expect(withKey({ DATABASE_URL: 'POSTGRESQL://u@h/db' }).DATABASE_URL).toBe('postgresql://u@h/db');
    expect(withKey({ DATABASE_URL: 'SQLite:./x.sqlite' }).DATABASE_URL).toBe('sqlite:./x.sqlite');
    expect(withKey({ DATABASE_URL: 'sqlite://./x.sqlite' }).DATABASE_URL).toBe('sqlite://./x.sqlite');
    expect(withKey({ DATABASE_URL: './data/a.sqlite' }).DATABASE_URL).toBe('./data/a.sqlite');
    for (const bad of ['mysql://u:pw@h/db', 'postgresql+x://u@h/db', 'file:///tmp/a.sqlite']) {
      expect(() => withKey({ DATABASE_URL: bad })).toThrow(/DATABASE_URL: unsupported scheme/);
    }
    // The refusal never echoes the password.
    expect(() => withKey({ DATABASE_URL: 'mysql://u:pw@h/db' })).not.toThrow(/pw/);
  });

  it('TLS_CERT_FILE and TLS_KEY_FILE come together (one alone served plain HTTP)', () => {
    expect(() => withKey({ TLS_CERT_FILE: '/etc/cert.pem' })).toThrow(/TLS_CERT_FILE \/ TLS_KEY_FILE: HTTPS needs both; only TLS_CERT_FILE is set/);
    expect(() => withKey({ TLS_KEY_FILE: '/etc/key.pem' })).toThrow(/only TLS_KEY_FILE is set/);
    expect(withKey({ TLS_CERT_FILE: '/c', TLS_KEY_FILE: '/k' }).TLS_KEY_FILE).toBe('/k');
  });
});
