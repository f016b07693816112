/**
 * Run logs appended from many places at once (partitions and migration days on several workers)
 * keep every line: each append reads and writes under the row's lock.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendRunLog, createBatchImport, findBatchImport, RUN_LOG_MAX } from '../../src/db/batch-imports.repo.js';
import { appendLog, findMigration, insertMigration } from '../../src/db/migration-runs.repo.js';
import { seedProject } from '../helpers/accounts.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

describe.each(dbKinds())('run logs appended concurrently on %s', (kind) => {
  let t: TestDb;
  let projectId: number;
  beforeAll(async () => {
    t = await createTestDb(kind);
    projectId = (await seedProject(t.db)).id;
  });
  afterAll(async () => t?.destroy());

  const lines = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `line ${from + i}`);
  const texts = (log: string[]) => log.map((l) => l.replace(/^\S+ /, ''));

  it('a batch import keeps every line of 30 appends at once, then only the newest RUN_LOG_MAX', async () => {
    const id = crypto.randomUUID();
    const now = Date.now();
    await createBatchImport(t.db, { id, projectId, type: 'events', format: 'ndjson', compression: 'none', strict: true, filePath: '/nowhere', fileBytes: 1, recordsTotal: 1, jobId: `j-${id}`, createdBy: null, now });
    const before = (await findBatchImport(t.db, id))!.log.length;
    await Promise.all(lines(30).map((l) => appendRunLog(t.db, id, l, now)));
    const log = texts((await findBatchImport(t.db, id))!.log);
    expect(log).toHaveLength(before + 30);
    expect(new Set(log.slice(before))).toEqual(new Set(lines(30)));

    await Promise.all(lines(RUN_LOG_MAX, 30).map((l) => appendRunLog(t.db, id, l, now)));
    expect(new Set(texts((await findBatchImport(t.db, id))!.log))).toEqual(new Set(lines(RUN_LOG_MAX, 30)));
  });

  it('a migration keeps every line of 30 appends at once', async () => {
    const id = crypto.randomUUID();
    const now = Date.now();
    await insertMigration(t.db, { id, projectId, sourceTool: 'amplitude', sourceKeyHash: 'h', credentials: 'sealed', sourceRegion: 'US', startDate: '2024-01-01', endDate: '2024-01-02', dryRun: false, days: ['2024-01-01', '2024-01-02'], now });
    const before = (await findMigration(t.db, id))!.log.length;
    await Promise.all(lines(30).map((l) => appendLog(t.db, id, l, now)));
    const log = texts((await findMigration(t.db, id))!.log);
    expect(log).toHaveLength(before + 30);
    expect(new Set(log.slice(before))).toEqual(new Set(lines(30)));
  });
});
