/** The pragmas every SQLite connection gets (createDb), read back from SQLite itself. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/knex.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqlite-settings-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function pragma(db: ReturnType<typeof createDb>, name: string): Promise<unknown> {
  const rows = (await db.raw(`PRAGMA ${name}`)) as Record<string, unknown>[];
  return Object.values(rows[0]!)[0];
}

describe('SQLite connection settings', () => {
  it('WAL, NORMAL sync, a 64 MB page cache by default, and SQLITE_CACHE_MB when set', async () => {
    const byDefault = createDb({ DATABASE_URL: path.join(dir, 'a.sqlite') });
    const configured = createDb({ DATABASE_URL: path.join(dir, 'b.sqlite'), SQLITE_CACHE_MB: 8 });
    try {
      expect(await pragma(byDefault, 'journal_mode')).toBe('wal');
      expect(await pragma(byDefault, 'synchronous')).toBe(1);
      expect(await pragma(byDefault, 'cache_size')).toBe(-64 * 1024);
      expect(await pragma(configured, 'cache_size')).toBe(-8 * 1024);
    } finally {
      await byDefault.destroy();
      await configured.destroy();
    }
  });
});
