/**
 * The event store for events kept in DATABASE_URL itself: SQLite (the embedded default) or
 * PostgreSQL. Writes join the caller's transaction when given one (a run's checkpoint commits
 * with its events); otherwise SQLite batches share commits through the write combiner and
 * Postgres takes one transaction per batch.
 */
import { countEvents, eventNamesSql } from './catalog-sql.js';
import { dialect, type Db, type DbOrTrx } from '../../db/knex.js';
import type { EventBatch, EventStore, MirrorResult, MirrorScope, ReportQuery, ScanQuery, WriteOptions } from '../event-store.js';
import { identityOfSql, usersOfDevicesSql } from './identity-sql.js';
import { KnownLinks } from '../known-links.js';
import { deleteKeys, deleteStamped, replaceKeys } from './mirror-sql.js';
import { reportSql } from './report-sql.js';
import { scanSql } from './scan-sql.js';
import { addUsage, insertEventRows, usageForMonth } from './sql-write.js';
import { sqliteWriteCombiner } from './sqlite-write-combiner.js';

export class SqlEventStore implements EventStore {
  readonly kind: 'sqlite' | 'postgres';
  readonly joinsTransactions = true;
  private readonly knownLinks = new KnownLinks();

  constructor(private readonly db: Db) {
    this.kind = dialect(db);
  }

  async migrate(): Promise<void> {
    // The events, identity_links and usage tables come with src/db/migrations.
  }

  private inTransaction<T>(options: WriteOptions | undefined, f: (trx: DbOrTrx) => Promise<T>): Promise<T> {
    return options?.within ? f(options.within) : this.db.transaction(f);
  }

  async writeBatch(batch: EventBatch, options?: WriteOptions): Promise<number> {
    const { projectId, source, now } = batch;
    const rows = { ...batch.rows, links: this.knownLinks.unknown(projectId, batch.rows.links) };
    let inserted: number;
    if (!options?.within && this.kind === 'sqlite') inserted = await sqliteWriteCombiner(this.db).store(projectId, source, rows, now);
    else
      inserted = await this.inTransaction(options, async (trx) => {
        const n = await insertEventRows(trx, projectId, source, rows, now);
        await addUsage(trx, projectId, source, n, now);
        return n;
      });
    // A caller's transaction commits later, or not at all: its links count as known once it has
    // committed (a run's batches repeat the same devices; a rollback leaves them unknown).
    if (!options?.within) this.knownLinks.committed(projectId, rows.links);
    else if (rows.links.length > 0)
      options.within.executionPromise.then(
        () => this.knownLinks.committed(projectId, rows.links),
        () => undefined,
      );
    return inserted;
  }

  updateByKey(batch: EventBatch, scope: MirrorScope, options?: WriteOptions): Promise<MirrorResult> {
    return this.inTransaction(options, async (trx) => {
      const result = await replaceKeys(trx, batch.projectId, scope, batch.source, batch.rows, batch.now);
      await addUsage(trx, batch.projectId, batch.source, result.inserted, batch.now);
      return result;
    });
  }

  deleteByKey(projectId: number, scope: MirrorScope, insertIds: readonly string[], options?: WriteOptions): Promise<number> {
    return this.inTransaction(options, (trx) => deleteKeys(trx, projectId, scope, insertIds));
  }

  deleteImportEvents(projectId: number, scope: MirrorScope): Promise<number> {
    return this.inTransaction(undefined, (trx) => deleteStamped(trx, projectId, scope));
  }

  scan(query: ScanQuery) {
    return scanSql(this.db, query);
  }

  report(query: ReportQuery) {
    return reportSql(this.db, query);
  }

  eventNames(projectId: number, sinceMs: number, limit: number) {
    return eventNamesSql(this.db, projectId, sinceMs, limit);
  }

  usageForMonth(projectId: number, month: string) {
    return usageForMonth(this.db, projectId, month);
  }

  count(projectId: number) {
    return countEvents(this.db, projectId);
  }

  identityOf(projectId: number, distinctId: string) {
    return identityOfSql(this.db, projectId, distinctId);
  }

  usersOfDevices(projectId: number, deviceIds: readonly string[]) {
    return usersOfDevicesSql(this.db, projectId, deviceIds);
  }

  async ping(): Promise<void> {
    await this.db.raw('SELECT 1');
  }

  async close(): Promise<void> {
    // The knex handle belongs to the process (src/bin), which destroys it.
  }
}
