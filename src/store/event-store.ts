/**
 * The ONE event-store interface. Every reader and writer of events goes through it; SQLite and
 * PostgreSQL (sql/) implement it today, ClickHouse plugs in beside them (createEventStore picks by
 * EVENT_STORE_URL). One shared contract suite (test/store/event-store.contract.ts) runs against
 * every implementation. Decisions are written down in docs/read-back.md ("The event store").
 *
 * Identity (CONTRACT §2.6, the simplified ID merge) lives here too:
 * - A **link** maps a device id to a user id per project. The first link of a device wins, for
 *   good: a device belongs to at most one user, a user has any number of devices. "First" is the
 *   order links are committed (within one batch: array order). Links are written in the same
 *   transaction as the events that carry them (SQL stores) — never separately.
 * - Each stored event may carry a **device id** (`EventRows.deviceId`): the device an anonymous
 *   event was done on. The write path sets it (domain/identity.ts, per the project's ID merge
 *   mode); events with a user id carry none, so they always stay with their own user.
 * - The **resolved id** of an event is the user its device id is linked to, or else its
 *   `distinct_id`. Resolution happens at read time (a join on the links), so a link made months
 *   later moves a device's earlier anonymous events to its user in every report and scan, and no
 *   event is ever rewritten.
 */
import type { Knex } from 'knex';
import type { Expr } from '../domain/where-expression.js';
import type { Unit } from '../domain/time-buckets.js';
import type { EventRows } from './event-rows.js';
import type { RowEncoding } from './row-encodings.js';

export type { EventRows, IdentityLink } from './event-rows.js';

/** What a writer hands to the store: one project's validated events from one source. */
export interface EventBatch {
  projectId: number;
  /** Which write path stored them (import, track, warehouse-import, migration, batch-import): usage is counted per source. */
  source: string;
  /** The events, plus the device ids and device → user links they carry (committed with them). */
  rows: EventRows;
  /** Epoch ms: the ingestion time stamped on the rows and the month usage is counted in. */
  now: number;
}

export interface WriteOptions {
  /**
   * A transaction on DATABASE_URL the write should join, so that a run's checkpoint commits with
   * its events. Stores that keep events in that same database (SQLite, PostgreSQL) write inside
   * it; a store elsewhere (ClickHouse) writes on its own first — safe, because every write is
   * exactly-once by its dedupe key, so a replay after a failed checkpoint stores nothing twice.
   */
  within?: Knex.Transaction;
}

/**
 * The mirror key of an event: `(project_id, $insert_id)`. Mirror syncs (issue 15) identify a
 * warehouse row by its insert-id column, and a corrected row may change its event, distinct_id
 * or time — so the key cannot be the whole dedupe key. It follows that within one project an
 * insert id names one event for mirror purposes: update and delete act on every stored event of
 * the project with that insert id.
 */
/**
 * Whose events a mirror may replace or delete: those a warehouse import loaded, by the
 * `$warehouse_import_id` stamp on each. Another import's, or `/import`'s, events with the same
 * insert id are not this mirror's to touch.
 */
export interface MirrorScope {
  importId: string;
}

/** The property every event of a warehouse import carries (docs/warehouse.md). */
export const WAREHOUSE_IMPORT_STAMP = '$warehouse_import_id';

export interface MirrorResult {
  /** Keys the import held that now hold the new event. */
  updated: number;
  /** Keys the import did not hold: stored as new events. */
  inserted: number;
  /**
   * Insert ids whose row was not stored because another source's event (another import's, or
   * one sent to /import or /track) already holds its dedupe key; that event stays as it is, and
   * the import's own older events of the insert id are gone.
   */
  skipped: string[];
}

/** One stored event as reads return it. */
export interface StoredEvent {
  event: string;
  distinctId: string;
  /** Epoch ms. */
  time: number;
  insertId: string;
  properties: Record<string, unknown>;
  /** The linked user of the event's device, else its distinct_id (see the file comment). */
  resolvedId: string;
}

export interface EventFilter {
  projectId: number;
  /** Inclusive, epoch ms. */
  fromMs: number;
  /** Exclusive, epoch ms. */
  toMs: number;
  /** Only these event names (absent or empty: all). */
  events?: readonly string[];
  /**
   * A `where` expression (domain/where-expression.ts) the store applies in its query. Property
   * names are those of the export record: stored properties plus `time` (seconds), `distinct_id`
   * and `$insert_id`. Only pass an expression `canPushDown` accepts.
   */
  where?: Expr;
}

export interface ScanQuery extends EventFilter {
  /** Events per page (the store may return fewer only on the last page). */
  pageSize: number;
}

export type ReportType = 'general' | 'unique' | 'average';

export interface ReportQuery extends EventFilter {
  unit: Unit;
  type: ReportType;
  /** Segment by this expression's value instead of by event name (only what `canPushDown` accepts). */
  on?: Expr;
}

/**
 * One cell of a report: a segment (the event name, or the label of the `on` value — see
 * domain/segmentation.ts `segmentLabels`; a list value counts under each distinct element) in
 * one time bucket (UTC). `value` is the event count (general), the count of distinct resolved
 * ids (unique) or events per distinct resolved id (average).
 */
export interface ReportCell {
  segment: string;
  /** Epoch ms of the bucket's start (domain/time-buckets.ts `bucketStart`). */
  bucket: number;
  value: number;
}

export interface EventNameCount {
  event: string;
  count: number;
}

/** `identityOf`: the identity cluster a distinct id belongs to. */
export interface Identity {
  /** The user the id is or resolves to; null for a device no user has been linked to. */
  userId: string | null;
  /** Every device linked to that user (for an unlinked device: just that device), sorted. */
  deviceIds: string[];
}

export interface EventStore {
  /** `sqlite`, `postgres`, `clickhouse`: for logs, readiness and tests. */
  readonly kind: string;

  /** The encoding the store wants in EventRows.encoded (prepared on the /import worker); none: it reads the columns. */
  readonly rowEncoding?: RowEncoding;

  /** Whether a write joins a DATABASE_URL transaction (WriteOptions.within): the events live in that database. */
  readonly joinsTransactions: boolean;

  /** Applies the store's own schema (the `release` process calls it; SQL stores use src/db migrations). */
  migrate(): Promise<void>;

  /**
   * Stores the batch exactly once: an event whose dedupe key `(project_id, event, distinct_id,
   * time, insert_id)` is already stored is skipped, however often it is replayed and by however
   * many writers at once. Counts the new events in usage and writes the links, all in one
   * transaction. Resolves only once durable; returns how many events were new.
   */
  writeBatch(batch: EventBatch, options?: WriteOptions): Promise<number>;

  /**
   * Mirror update: for each row, every stored event of the project with that insert id that the
   * scope's import loaded is replaced by the row (which may change event, distinct_id, time or
   * properties). Rows whose insert id the import has not stored are inserted. Events of other
   * sources are never touched: a row whose dedupe key one of them holds is skipped. One
   * transaction; usage counts only the inserted.
   */
  updateByKey(batch: EventBatch, scope: MirrorScope, options?: WriteOptions): Promise<MirrorResult>;

  /** Mirror delete: removes the scope's import's events with one of these insert ids; returns how many of the ids it held. */
  deleteByKey(projectId: number, scope: MirrorScope, insertIds: readonly string[], options?: WriteOptions): Promise<number>;

  /** Removes every event the scope's import loaded, whatever its sync mode (an import deleted with delete_data); returns how many. */
  deleteImportEvents(projectId: number, scope: MirrorScope): Promise<number>;

  /**
   * The events of the filter in (time, then a store-defined tie-break) order, one page per
   * iteration, fetched only when the consumer pulls (keyset pages: nothing held between pages).
   */
  scan(query: ScanQuery): AsyncGenerator<StoredEvent[]>;

  /**
   * A segmentation report as one query in the store: cells for every (segment, bucket) with at
   * least one event. Empty buckets and top-N selection are the caller's (readback/insights.ts).
   */
  report(query: ReportQuery): Promise<ReportCell[]>;

  /** Event names with event time at or after `sinceMs`, most frequent first (ties by name). */
  eventNames(projectId: number, sinceMs: number, limit: number): Promise<EventNameCount[]>;

  /** This month's (`YYYY-MM`, UTC) newly stored events per source. */
  usageForMonth(projectId: number, month: string): Promise<Record<string, number>>;

  /** Stored events of the project (all time). */
  count(projectId: number): Promise<number>;

  /**
   * The identity cluster of `distinctId`: `$device:<d>` and a bare device id `d` that has a link
   * resolve to that device's user; any other id is taken as a user id.
   */
  identityOf(projectId: number, distinctId: string): Promise<Identity>;

  /** The user each of these devices is linked to (first link wins); unlinked devices are absent. */
  usersOfDevices(projectId: number, deviceIds: readonly string[]): Promise<Map<string, string>>;

  /** Throws when the store cannot answer (for /readyz). */
  ping(): Promise<void>;

  /** Releases what the store opened itself (never the shared DATABASE_URL handle). */
  close(): Promise<void>;
}
