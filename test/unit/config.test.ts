import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config/index.js';

describe('config', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ PORT: 8080, DATABASE_URL: './data/analytics.sqlite', REDIS_URL: 'redis://127.0.0.1:6379', REGION: 'US', IMPORT_MAX_EVENTS: 2000 });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('fails fast with a readable message naming the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ REGION: 'MARS' })).toThrow(/REGION/);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRETS_KEY/);
  });
});
