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
  /** time_based: only rows whose `column` is greater than `value`. */
  after?: { column: string; value: string | number };
  /** people/groups: only the latest row per key by `orderColumn` (ties broken deterministically); null keys excluded. */
  latestBy?: { keyColumns: string[]; orderColumn: string };
  /** A deterministic order (needed for resuming with `offset`). */
  orderBy?: string[];
  /** Skip this many rows of the ordered result (resume after a committed checkpoint). */
  offset?: number;
}

export interface ConnectorContext {
  log: { info: (obj: object, msg?: string) => void; warn: (obj: object, msg?: string) => void };
  /** Aborted on shutdown: stop reading, cancel the running statement, end the stream. */
  signal: AbortSignal;
}

export interface WarehouseConnector {
  readonly type: 'sqlite' | 'postgres' | 'snowflake';
  /** Connects and runs a trivial query; throws with a clear message on bad credentials or host. */
  test(): Promise<void>;
  /** The columns of a table or of a query's result. Throws when the table does not exist. */
  describe(source: TableRef): Promise<ColumnInfo[]>;
  /** Streams the rows of `spec`; large integers beyond 2^53 arrive as strings. */
  stream(spec: ReadSpec, ctx: ConnectorContext): AsyncIterable<Row>;
  close(): Promise<void>;
}
