/**
 * The interface every warehouse source implements (sqlite, postgres, snowflake). A connector
 * streams rows with back-pressure and builds the source-side SQL (latest row per key is pushed
 * down to the warehouse as a window query). It never imports knex, bullmq or express.
 */

export type TableRef = { table: string } | { query: string };

export interface ColumnInfo {
  name: string;
  /** The source's own type name, lower-cased (e.g. 'integer', 'text', 'timestamp_ntz'). */
  type: string;
  nullable: boolean;
}

export type Row = Record<string, unknown>;

export interface ReadSpec {
  source: TableRef;
  /**
   * time_based: only rows whose `column` is at or after `value` (the last run's greatest). The
   * rows at the watermark are read again, and deduplicated, so a row inserted later with that
   * same insert time is still loaded.
   */
  after?: { column: string; value: string | number };
  /**
   * people/groups: only the latest row per key by `orderColumn` (ties broken deterministically); null keys excluded.
   * Rows whose `orderColumn` is null lose to any row with a value (NULLS LAST). `tieBreak` (optional,
   * additive): columns compared as text, descending, after `orderColumn` — the row with the greater
   * values wins a tie. Without it, ties go to whichever row the source returns first.
   */
  latestBy?: { keyColumns: string[]; orderColumn: string; tieBreak?: string[] };
  /** A deterministic order (needed for resuming with `offset`). */
  orderBy?: string[];
  /** Skip this many rows of the ordered result (resume after a committed checkpoint). */
  offset?: number;
  /**
   * Additive: select only these columns, in this order (default: every column of the source).
   * The sync passes the columns `describe()` returned, so window helper columns never leak out.
   */
  columns?: string[];
  /**
   * Additive: only rows whose `column` lies in [from, to) — one partition of a large run, pushed
   * down into the source's WHERE (inside the window query for `latestBy`, so a key's rows stay
   * together when `column` is the key). An absent bound is open; `nulls` also takes the rows
   * whose `column` is NULL (the first partition does, so every row is in exactly one partition).
   */
  range?: KeyRange;
}

export interface KeyRange {
  column: string;
  from?: string | number;
  to?: string | number;
  nulls?: boolean;
}

export interface ConnectorContext {
  log: { info: (obj: object, msg?: string) => void; warn: (obj: object, msg?: string) => void };
  /** Aborted on shutdown: stop reading, cancel the running statement, end the stream. */
  signal: AbortSignal;
}

export interface WarehouseConnector {
  readonly type: 'sqlite' | 'postgres' | 'snowflake' | 'mysql' | 'redshift' | 'bigquery' | 'databricks';
  /** Connects and runs a trivial query; throws with a clear message on bad credentials or host. */
  test(): Promise<void>;
  /** The columns of a table or of a query's result. Throws when the table does not exist. */
  describe(source: TableRef): Promise<ColumnInfo[]>;
  /** Streams the rows of `spec`; large integers beyond 2^53 arrive as strings. */
  stream(spec: ReadSpec, ctx: ConnectorContext): AsyncIterable<Row>;
  /**
   * Additive, optional: the same rows as `stream`, in arrays of at most `size` rows (the last may
   * be shorter; never empty). Lets a sync skip one promise hop per row; it is used when present,
   * otherwise the sync batches `stream` itself. Same back-pressure and abort rules as `stream`.
   */
  streamBatches?(spec: ReadSpec, ctx: ConnectorContext, size: number): AsyncIterable<Row[]>;
  /**
   * Additive, optional: the number of rows `stream(spec)` would yield before `offset` is applied
   * (a `SELECT COUNT(*)` over the same query). The sync uses it for its progress percentage only,
   * so an implementation may return an estimate, or leave the method out (progress then shows rows read).
   */
  count?(spec: ReadSpec, ctx: ConnectorContext): Promise<number>;
  /**
   * Additive, optional: split points for partitioning a large run — the non-null values of
   * `column` at every `every`-th position of the rows of `spec` in `column` order (one window
   * query in the source). Equal neighbours are dropped, so a value shared by many rows makes a
   * larger partition. Without it a run is never partitioned.
   */
  splitPoints?(spec: ReadSpec, column: string, every: number, ctx: ConnectorContext): Promise<(string | number)[]>;
  /**
   * Additive, optional: the warehouse's own change tracking (Snowflake's CHANGES clause), used by
   * mirror syncs instead of reading the whole table. `changePoint` is the source's "now" (epoch ms)
   * — taken before a read, it is where the next run's changes start. `streamChanges` yields the
   * changes of a TABLE since `since` (a point taken earlier), ordered by `keyColumn`; `row` has the
   * spec's columns only. A key may come with several changes (an update as a delete and an
   * upsert): the reader keeps an upsert if the key has one, else the delete — so a source hands on
   * either its net changes per row or just the last change per key. It throws ChangesUnavailable
   * when the table has no change tracking, or not back to `since`.
   */
  changePoint?(ctx: ConnectorContext): Promise<number>;
  streamChanges?(spec: ReadSpec, since: number, keyColumn: string, ctx: ConnectorContext): AsyncIterable<ChangeRow>;
  close(): Promise<void>;
}

/** One net change of a tracked table: the row's current version, or the last version of a deleted row. */
export interface ChangeRow {
  action: 'upsert' | 'delete';
  row: Row;
}

/** The table's change tracking cannot answer (not enabled, or not as far back as asked): read it whole instead. */
export class ChangesUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChangesUnavailable';
  }
}

/**
 * Additive: what a connector throws for a source-side failure. The message must be safe to show
 * the user (no credentials) — the API answers it as a 400 on create and the sync log records it.
 * `retryable`: a later attempt may succeed (network trouble, timeouts, the source restarting);
 * false for bad credentials, a missing table or column, invalid SQL — the run then fails at once.
 * Any other error a connector throws is treated as retryable.
 */
export class WarehouseError extends Error {
  constructor(
    message: string,
    readonly retryable = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'WarehouseError';
  }
}

/** Additive: thrown (or the stream ends with it) when `ctx.signal` aborted the read. */
export class WarehouseReadAborted extends Error {
  constructor() {
    super('warehouse read aborted');
    this.name = 'WarehouseReadAborted';
  }
}
