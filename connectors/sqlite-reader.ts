/**
 * Reading a SQLite source file, synchronously: opened read-only (a user's query cannot write),
 * streamed with `iterate()` so only the current batch is in memory. Integers beyond 2^53 arrive
 * as strings. Runs in the child process of sqlite.connector.ts (sqlite.child.ts): a statement
 * here can run for ever in native code (a recursive CTE), and only a process can be killed then.
 */
import { classifyCode } from '../src/lib/error-codes.js';
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { checkSqlitePath, real, type SqlitePathSettings } from './sqlite-path.js';
import { buildCountQuery, buildProbeQuery, buildReadQuery, buildSplitPointsQuery, distinctPoints, splitTableName, SQLITE_DIALECT } from './sql-builder.js';
import {
  WarehouseError,
  type ColumnInfo,
  type ReadSpec,
  type Row,
  type TableRef,
} from './warehouse.js';

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

export class SqliteReader {
  constructor(
    private readonly config: { path: string },
    /** The allowed-directories rule, checked again at every open (a symlink may have changed). */
    private readonly pathSettings: SqlitePathSettings,
  ) {}

  private open(): Database.Database {
    const refused = checkSqlitePath(this.config, this.pathSettings);
    if (refused) throw new WarehouseError(refused);
    // Open what the check saw: the path with symlinks resolved.
    const file = real(this.config.path);
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

  test(): void {
    this.with((db) => {
      try {
        db.prepare('SELECT count(*) FROM sqlite_master').get();
      } catch (err) {
        throw new WarehouseError(`${this.config.path} is not a readable SQLite database: ${sqliteMessage(err)}`);
      }
    });
  }

  describe(source: TableRef): ColumnInfo[] {
    return this.with((db) => ('table' in source ? describeTable(db, source.table) : describeQuery(db, source.query)));
  }

  count(spec: ReadSpec): number {
    return this.with((db) => {
      const q = buildCountQuery(spec, SQLITE_DIALECT);
      const row = prepare(db, q.sql).get(...q.params) as { n: number };
      return Number(row.n);
    });
  }

  splitPoints(spec: ReadSpec, column: string, every: number): (string | number)[] {
    return this.with((db) => {
      const q = buildSplitPointsQuery(spec, column, every, SQLITE_DIALECT);
      const stmt = prepare(db, q.sql);
      stmt.safeIntegers(true);
      return distinctPoints((stmt.all(...q.params) as { v: unknown }[]).map((r) => (typeof r.v === 'bigint' ? fromBigInt(r.v) : r.v)));
    });
  }

  /** The rows of `spec` in arrays of at most `size` (the last may be shorter; never empty). */
  *batches(spec: ReadSpec, size: number): Generator<Row[]> {
    const db = this.open();
    try {
      const q = buildReadQuery(withRowidOrder(db, spec), SQLITE_DIALECT);
      const stmt = prepare(db, q.sql);
      stmt.safeIntegers(true);
      const it = stmt.iterate(...q.params) as IterableIterator<Row>;
      try {
        for (;;) {
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
            throw new WarehouseError(`reading from SQLite failed: ${sqliteMessage(err)}`, classifyCode((err as { code?: string }).code) === 'retryable');
          }
          if (batch.length > 0) yield batch;
          if (done) break;
        }
      } finally {
        it.return?.();
      }
    } finally {
      db.close();
    }
  }
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
