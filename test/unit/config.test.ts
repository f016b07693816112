import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config/index.js';
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

  it('defaults to production: no SECRETS_KEY is refused unless development (or test) is asked for', () => {
    expect(() => loadConfig({})).toThrow(/SECRETS_KEY: required in production, the default NODE_ENV/);
    expect(loadConfig({ NODE_ENV: 'development' }).SECRETS_KEY).toBeUndefined();
    expect(loadConfig({ MIGRATION_REQUIRE_AUTH: 'true', SECRETS_KEY: KEY }).MIGRATION_REQUIRE_AUTH).toBe(true);
  });
});

describe('Redis config', () => {
  it('parses REDIS_CLUSTER_NODES once into host/port pairs; empty means plain Redis', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).REDIS_CLUSTER_NODES).toEqual([]);
    expect(loadConfig({ NODE_ENV: 'test', REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b.internal:7001,[::1]:7002' }).REDIS_CLUSTER_NODES).toEqual([
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
