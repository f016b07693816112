import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/lib/redact-url.js';

describe('redactUrl', () => {
  it('drops the credentials of any scheme, keeping where it points', () => {
    expect(redactUrl('postgres://app:hunter2@db.internal:5432/prod?sslmode=require')).toBe('postgres://***@db.internal:5432/prod?sslmode=require');
    expect(redactUrl('redis://:pw@127.0.0.1:6379/0')).toBe('redis://***@127.0.0.1:6379/0');
    expect(redactUrl('clickhouses://default:pw@ch:8443/events')).toBe('clickhouses://***@ch:8443/events');
  });

  it('does not half-print a password holding an unencoded @', () => {
    expect(redactUrl('postgres://app:p@ss@db:5432/x')).toBe('postgres://***@db:5432/x');
  });

  it('leaves URLs without credentials and SQLite paths alone', () => {
    expect(redactUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(redactUrl('./data/analytics.sqlite')).toBe('./data/analytics.sqlite');
    expect(redactUrl('/srv/a@b/analytics.sqlite')).toBe('/srv/a@b/analytics.sqlite');
  });
});
