/**
 * Lookup tables (`lookup_tables`) and their rows (`lookup_rows`: the first CSV column as `key`,
 * the other columns typed in `properties`). A replace deletes every row and inserts the new ones
 * inside the caller's transaction. SQLite takes the rows through one prepared statement on the
 * transaction's connection; Postgres takes a chunk as one unnest() statement.
 */
import type Database from 'better-sqlite3';
import { dialect, lockedOnPostgres, parseJson, toNumber, type DbOrTrx } from './knex.js';

export interface LookupTable {
  id: number;
  projectId: number;
  name: string;
  /** The event property whose value is this table's key (read-back joins rows in); null: none. */
  mappedProperty: string | null;
  createdAt: number;
  /** When the rows were last replaced; null before the first upload. */
  replacedAt: number | null;
}

function toTable(r: Record<string, unknown>): LookupTable {
  return {
    id: toNumber(r.id),
    projectId: toNumber(r.project_id),
    name: r.name as string,
    mappedProperty: (r.mapped_property as string | null) ?? null,
    createdAt: toNumber(r.created_at),
    replacedAt: r.replaced_at === null || r.replaced_at === undefined ? null : toNumber(r.replaced_at),
  };
}

export async function insertLookupTable(
  db: DbOrTrx,
  t: { projectId: number; name: string; mappedProperty: string | null; now: number },
): Promise<LookupTable> {
  const [row] = await db('lookup_tables')
    .insert({ project_id: t.projectId, name: t.name, mapped_property: t.mappedProperty, created_at: t.now })
    .returning('*');
  return toTable(row);
}

/**
 * The (project, name) unique key refused a write: the name is taken in the project. Both
 * drivers' codes (PostgreSQL, better-sqlite3).
 */
export function isNameTaken(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

export async function findLookupTable(db: DbOrTrx, id: number): Promise<LookupTable | undefined> {
  const row = await db('lookup_tables').where({ id }).first();
  return row ? toTable(row) : undefined;
}

/**
 * The table row, locked until the transaction ends (PostgreSQL FOR UPDATE; SQLite transactions
 * hold the one write lock): replaces and deletes of one table take it first and so run one at a
 * time — each replace sees the rows the previous one committed, and none inserts rows for a table
 * deleted meanwhile. Undefined: the table is gone.
 */
export async function lockLookupTable(db: DbOrTrx, id: number): Promise<LookupTable | undefined> {
  const row = await lockedOnPostgres(db, db('lookup_tables').where({ id })).first();
  return row ? toTable(row) : undefined;
}

export async function listLookupTables(db: DbOrTrx, projectId: number): Promise<LookupTable[]> {
  return (await db('lookup_tables').where({ project_id: projectId }).orderBy('id')).map(toTable);
}

export async function updateLookupTable(
  db: DbOrTrx,
  id: number,
  patch: { name?: string; mappedProperty?: string | null },
): Promise<LookupTable | undefined> {
  const changes: Record<string, unknown> = {};
  if (patch.name !== undefined) changes.name = patch.name;
  if (patch.mappedProperty !== undefined) changes.mapped_property = patch.mappedProperty;
  if (Object.keys(changes).length > 0) await db('lookup_tables').where({ id }).update(changes);
  return findLookupTable(db, id);
}

/** Call inside a transaction: the table is locked first (lockLookupTable), as a replace does. */
export async function deleteLookupTable(db: DbOrTrx, id: number): Promise<void> {
  await lockLookupTable(db, id);
  // Rows first: SQLite enforces the cascade only with foreign_keys on, so do not rely on it.
  await db('lookup_rows').where({ lookup_table_id: id }).delete();
  await db('lookup_tables').where({ id }).delete();
}

export async function countLookupRows(db: DbOrTrx, tableId: number): Promise<number> {
  const row = await db('lookup_rows').where({ lookup_table_id: tableId }).count({ n: '*' }).first();
  return toNumber(row?.n ?? 0);
}

/** Every row of a table in key order (tests and small tables). */
export async function listLookupRows(db: DbOrTrx, tableId: number): Promise<{ key: string; properties: Record<string, unknown> }[]> {
  const rows = await db('lookup_rows').select('key', 'properties').where({ lookup_table_id: tableId }).orderBy('key');
  return rows.map((r) => ({ key: r.key as string, properties: parseJson(r.properties) ?? {} }));
}

/** A row ready to store: the key and its properties already serialised as JSON. */
export type LookupRowJson = readonly [key: string, propertiesJson: string];

const PG_CHUNK = 5000;
const PG_INSERT =
  'INSERT INTO lookup_rows (lookup_table_id, key, properties) SELECT ?, k, p::jsonb FROM unnest(?::text[], ?::text[]) AS u(k, p)';
const SQLITE_INSERT = 'INSERT INTO lookup_rows (lookup_table_id, key, properties) VALUES (?, ?, ?)';
const statements = new WeakMap<Database.Database, Database.Statement>();

/**
 * Replaces all rows of a table; call inside a transaction, after lockLookupTable, so readers
 * never see it half done and concurrent replaces never interleave.
 */
export async function replaceLookupRows(db: DbOrTrx, tableId: number, rows: Iterable<LookupRowJson>, now: number): Promise<void> {
  await db('lookup_rows').where({ lookup_table_id: tableId }).delete();
  if (dialect(db) === 'postgres') {
    let keys: string[] = [];
    let props: string[] = [];
    const flush = async () => {
      if (keys.length > 0) await db.raw(PG_INSERT, [tableId, keys, props]);
      keys = [];
      props = [];
    };
    for (const [key, json] of rows) {
      keys.push(key);
      props.push(json);
      if (keys.length === PG_CHUNK) await flush();
    }
    await flush();
  } else {
    const conn = (await db.client.acquireConnection()) as Database.Database;
    try {
      let stmt = statements.get(conn);
      if (!stmt) {
        stmt = conn.prepare(SQLITE_INSERT);
        statements.set(conn, stmt);
      }
      for (const [key, json] of rows) stmt.run(tableId, key, json);
    } finally {
      if (!('isTransaction' in db && db.isTransaction)) await db.client.releaseConnection(conn);
    }
  }
  await db('lookup_tables').where({ id: tableId }).update({ replaced_at: now });
}
