/**
 * A SQLite file as a warehouse source: opened read-only (a user's query cannot write), streamed
 * with `iterate()` so only the current row is in memory. Integers beyond 2^53 arrive as strings.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { buildCountQuery, buildProbeQuery, buildReadQuery, splitTableName, SQLITE_DIALECT } from './sql-builder.js';
import {
  WarehouseError,
  WarehouseReadAborted,
  type ColumnInfo,
  type ConnectorContext,
  type ReadSpec,
  type Row,
  type TableRef,
  type WarehouseConnector,
} from './warehouse.js';

export const sqliteConfigSchema = z
  .object({
    path: z
      .string({ error: "config.path is required: the absolute path of the SQLite file" })
      .min(1, 'config.path must not be empty')
      .refine((p) => path.isAbsolute(p), 'config.path must be an absolute path'),
  })
  .strict();

export type SqliteSourceConfig = z.infer<typeof sqliteConfigSchema>;

/** `stream()`: rows read between checks of the abort signal and yields to the event loop. */
const YIELD_EVERY = 1000;

function fromBigInt(v: bigint): number | string {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
}

/** safeIntegers mode gives every INTEGER as a bigint; keep exact ones as numbers. */
function normaliseRow(row: Row): Row {
  for (const k in row) {
    const v = row[k];
    if (typeof v === 'bigint') row[k] = fromBigInt(v);
  }
  return row;
}

function sqliteMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class SqliteConnector implements WarehouseConnector {
  readonly type = 'sqlite' as const;

  constructor(private readonly config: SqliteSourceConfig) {}

  private open(): Database.Database {
    const file = this.config.path;
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch {
      throw new WarehouseError(`SQLite file not found: ${file}`);
    }
    if (!stat.isFile()) throw new WarehouseError(`not a file: ${file}`);
    try {
      const db = new Database(file, { readonly: true, fileMustExist: true });
      // A read must never wait long on a writer's lock in someone else's process.
      db.pragma('busy_timeout = 5000');
      return db;
    } catch (err) {
      throw new WarehouseError(`cannot open SQLite file ${file}: ${sqliteMessage(err)}`);
    }
  }

  private with<T>(fn: (db: Database.Database) => T): T {
    const db = this.open();
    try {
      return fn(db);
    } finally {
      db.close();
    }
  }

  async test(): Promise<void> {
    this.with((db) => {
      try {
        db.prepare('SELECT count(*) FROM sqlite_master').get();
      } catch (err) {
        throw new WarehouseError(`${this.config.path} is not a readable SQLite database: ${sqliteMessage(err)}`);
      }
    });
  }

  async describe(source: TableRef): Promise<ColumnInfo[]> {
    return this.with((db) => ('table' in source ? describeTable(db, source.table) : describeQuery(db, source.query)));
  }

  async count(spec: ReadSpec): Promise<number> {
    return this.with((db) => {
      const q = buildCountQuery(spec, SQLITE_DIALECT);
      const row = prepare(db, q.sql).get(...q.params) as { n: number };
      return Number(row.n);
    });
  }

  async *stream(spec: ReadSpec, ctx: ConnectorContext): AsyncIterable<Row> {
    for await (const batch of this.streamBatches(spec, ctx, YIELD_EVERY)) yield* batch;
  }

  async *streamBatches(spec: ReadSpec, ctx: ConnectorContext, size: number): AsyncIterable<Row[]> {
    const db = this.open();
    try {
      const q = buildReadQuery(withRowidOrder(db, spec), SQLITE_DIALECT);
      const stmt = prepare(db, q.sql);
      stmt.safeIntegers(true);
      const it = stmt.iterate(...q.params) as IterableIterator<Row>;
      try {
        for (;;) {
          if (ctx.signal.aborted) throw new WarehouseReadAborted();
          const batch: Row[] = [];
          let done = false;
          try {
            while (batch.length < size) {
              const next = it.next();
              if (next.done) {
                done = true;
                break;
              }
              batch.push(normaliseRow(next.value));
            }
          } catch (err) {
            throw new WarehouseError(`reading from SQLite failed: ${sqliteMessage(err)}`, /busy|locked/i.test(sqliteMessage(err)));
          }
          if (batch.length > 0) yield batch;
          if (done) break;
          // Reading is synchronous: give timers (job lock renewal, signals) a turn between batches.
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      } finally {
        it.return?.();
      }
    } finally {
      db.close();
    }
  }

  async close(): Promise<void> {}
}

/**
 * A plain rowid table is read in rowid order instead of `orderBy`: deterministic too (the resume
 * offset stays exact), free (no sort of the whole table before the first row), and rows inserted
 * between attempts land after the rows already read rather than shifting them. Window reads,
 * queries, views, WITHOUT ROWID tables and tables with a column named like the rowid keep `orderBy`.
 */
function withRowidOrder(db: Database.Database, spec: ReadSpec): ReadSpec {
  if (!spec.orderBy || spec.latestBy || !('table' in spec.source)) return spec;
  const parts = splitTableName(spec.source.table);
  if (parts.length > 2) return spec;
  const [schema, name] = parts.length === 2 ? [parts[0]!, parts[1]!] : ['main', parts[0]!];
  try {
    const t = db.prepare('SELECT type, wr FROM pragma_table_list WHERE schema = ? AND name = ?').get(schema, name) as
      | { type: string; wr: number }
      | undefined;
    if (!t || t.type !== 'table' || t.wr !== 0) return spec;
    const cols = tableColumns(db, name, schema).map((c) => c.name.toLowerCase());
    if (cols.some((c) => c === 'rowid' || c === '_rowid_' || c === 'oid')) return spec;
  } catch {
    return spec;
  }
  return { ...spec, orderBy: ['rowid'] };
}

function prepare(db: Database.Database, sql: string): Database.Statement {
  try {
    return db.prepare(sql);
  } catch (err) {
    const msg = sqliteMessage(err);
    if (/no such table/i.test(msg)) throw new WarehouseError(`table not found: ${msg.replace(/^no such table:\s*/i, '')}`);
    if (/no such column/i.test(msg)) throw new WarehouseError(`column not found: ${msg.replace(/^no such column:\s*/i, '')}`);
    throw new WarehouseError(`the source rejected the query: ${msg}`);
  }
}

interface PragmaColumn {
  name: string;
  type: string;
  notnull: number;
  pk: number;
}

function tableColumns(db: Database.Database, table: string, schema: string | undefined): PragmaColumn[] {
  return (schema
    ? db.prepare('SELECT name, type, "notnull", pk FROM pragma_table_info(?, ?)').all(table, schema)
    : db.prepare('SELECT name, type, "notnull", pk FROM pragma_table_info(?)').all(table)) as PragmaColumn[];
}

function toColumnInfo(c: PragmaColumn, primaryKeyCount: number): ColumnInfo {
  // An INTEGER PRIMARY KEY is the rowid: never null even without NOT NULL.
  const rowid = c.pk === 1 && primaryKeyCount === 1 && c.type.toLowerCase() === 'integer';
  return { name: c.name, type: (c.type || 'any').toLowerCase(), nullable: c.notnull === 0 && !rowid };
}

function describeTable(db: Database.Database, table: string): ColumnInfo[] {
  const parts = splitTableName(table);
  if (parts.length > 2) throw new WarehouseError(`SQLite table names are [schema.]table, not ${JSON.stringify(table)}`);
  const [schema, name] = parts.length === 2 ? [parts[0], parts[1]!] : [undefined, parts[0]!];
  const cols = tableColumns(db, name, schema);
  if (cols.length === 0) throw new WarehouseError(`table not found: ${table}`);
  const pks = cols.filter((c) => c.pk > 0).length;
  return cols.map((c) => toColumnInfo(c, pks));
}

/** A query's columns; nullability is known when a column comes straight from a table column. */
function describeQuery(db: Database.Database, query: string): ColumnInfo[] {
  const stmt = prepare(db, buildProbeQuery({ query }));
  const cache = new Map<string, PragmaColumn[]>();
  return stmt.columns().map((c) => {
    let info: ColumnInfo = { name: c.name, type: (c.type ?? 'any').toLowerCase(), nullable: true };
    if (c.table && c.column) {
      const key = `${c.database}.${c.table}`;
      if (!cache.has(key)) cache.set(key, tableColumns(db, c.table, c.database ?? undefined));
      const cols = cache.get(key)!;
      const origin = cols.find((o) => o.name === c.column);
      if (origin) info = { ...toColumnInfo(origin, cols.filter((o) => o.pk > 0).length), name: c.name };
    }
    return info;
  });
}
