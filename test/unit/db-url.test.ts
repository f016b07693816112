import { describe, expect, it } from 'vitest';
import { dialectOf } from '../../src/db/knex.js';

describe('the dialect of a database URL', () => {
  it('is PostgreSQL for postgres:// and postgresql:// in any case, SQLite for sqlite:// and paths', () => {
    expect(dialectOf('postgres://u@h/db')).toBe('postgres');
    expect(dialectOf('Postgres://u@h/db')).toBe('postgres');
    expect(dialectOf('POSTGRESQL://u@h/db')).toBe('postgres');
    expect(dialectOf('sqlite:///srv/a.sqlite')).toBe('sqlite');
    expect(dialectOf('./data/analytics.sqlite')).toBe('sqlite');
    expect(dialectOf('/srv/a.sqlite')).toBe('sqlite');
  });

  it('refuses any other scheme instead of taking it for a SQLite path', () => {
    for (const url of ['mysql://root@h/db', 'postgresql+x://u@h/db', 'clickhouse://h:8123/db']) {
      expect(() => dialectOf(url), url).toThrow(/unsupported database URL scheme/);
    }
  });
});
