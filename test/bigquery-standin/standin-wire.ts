/**
 * BigQuery's REST value format for the stand-in: table schemas (kept in a `__bq_schema` table of
 * the SQLite file, since SQLite type names cannot spell ARRAY<…> or STRUCT<…>), result schemas
 * (a column that comes from a table carries that field's type; an expression's type is inferred
 * from its values), and rows as `{f:[{v:…}]}` with every scalar as a string, as BigQuery sends them.
 *
 * Storage in SQLite: INTEGER/FLOAT/BOOLEAN (0/1) natively; NUMERIC, STRING, DATE as text;
 * TIMESTAMP and DATETIME as 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC, fixed width, so text order is time
 * order); JSON as its text; REPEATED and RECORD as JSON text.
 */
import type Database from 'better-sqlite3';

export interface Field {
  name: string;
  type: string;
  mode?: 'NULLABLE' | 'REQUIRED' | 'REPEATED';
  fields?: Field[];
}

export const SCHEMA_TABLE = '__bq_schema';

export function ensureSchemaTable(db: Database.Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${SCHEMA_TABLE} (table_name TEXT PRIMARY KEY, fields TEXT NOT NULL)`);
}

export function tableSchema(db: Database.Database, table: string): Field[] | undefined {
  const row = db.prepare(`SELECT fields FROM ${SCHEMA_TABLE} WHERE table_name = ?`).get(table) as { fields: string } | undefined;
  return row ? (JSON.parse(row.fields) as Field[]) : undefined;
}

const SQLITE_AFFINITY: Record<string, string> = { INTEGER: 'INTEGER', INT64: 'INTEGER', FLOAT: 'REAL', FLOAT64: 'REAL', BOOLEAN: 'INTEGER', BOOL: 'INTEGER' };

/** Creates a table from a BigQuery schema (REST names: INTEGER, FLOAT, BOOLEAN, RECORD, …). */
export function createTable(db: Database.Database, table: string, fields: Field[]): void {
  ensureSchemaTable(db);
  const cols = fields.map((f) => {
    const affinity = f.mode === 'REPEATED' || f.type === 'RECORD' ? 'TEXT' : (SQLITE_AFFINITY[f.type] ?? 'TEXT');
    return `"${f.name.replaceAll('"', '""')}" ${affinity}${f.mode === 'REQUIRED' ? ' NOT NULL' : ''}`;
  });
  db.exec(`CREATE TABLE "${table.replaceAll('"', '""')}" (${cols.join(', ')})`);
  db.prepare(`INSERT INTO ${SCHEMA_TABLE} (table_name, fields) VALUES (?, ?)`).run(table, JSON.stringify(fields));
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** A Date (or epoch ms) in the stored TIMESTAMP/DATETIME form. */
export function storedTime(d: Date | number, micros = 0): string {
  const x = new Date(typeof d === 'number' ? d : d.getTime());
  return `${x.getUTCFullYear()}-${pad(x.getUTCMonth() + 1)}-${pad(x.getUTCDate())} ${pad(x.getUTCHours())}:${pad(x.getUTCMinutes())}:${pad(x.getUTCSeconds())}.${pad(x.getUTCMilliseconds() * 1000 + micros, 6)}`;
}

/** A JS value as it is stored for a field (what fixtures insert). */
export function storedValue(f: Field, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (f.mode === 'REPEATED' || f.type === 'RECORD') return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
  switch (f.type) {
    case 'TIMESTAMP':
    case 'DATETIME':
      return v instanceof Date ? storedTime(v) : v;
    case 'DATE':
      return v instanceof Date ? v.toISOString().slice(0, 10) : v;
    case 'BOOLEAN':
    case 'BOOL':
      return typeof v === 'boolean' ? (v ? 1 : 0) : v;
    case 'JSON':
      return typeof v === 'string' ? v : JSON.stringify(v);
    case 'NUMERIC':
    case 'BIGNUMERIC':
      return String(v);
    default:
      return typeof v === 'object' ? JSON.stringify(v) : v;
  }
}

/** A stored TIMESTAMP/DATETIME text → epoch microseconds (as a bigint). */
function storedMicros(text: string): bigint {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?/.exec(text);
  if (!m) throw new Error(`stand-in: bad stored time ${JSON.stringify(text)}`);
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  return BigInt(ms) * 1000n + BigInt((m[7] ?? '').padEnd(6, '0'));
}

export interface EncodeOptions {
  useInt64Timestamp: boolean;
}

type Cell = { v: unknown };

function scalar(type: string, v: unknown, o: EncodeOptions): unknown {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'BOOLEAN':
    case 'BOOL':
      return v === 1 || v === 1n || v === true || v === 'true' ? 'true' : 'false';
    case 'TIMESTAMP': {
      const us = storedMicros(String(v));
      if (o.useInt64Timestamp) return us.toString();
      return (Number(us) / 1e6).toExponential().replace('e+', 'E');
    }
    case 'DATETIME':
      return String(v).replace(' ', 'T').replace(/\.0{6}$/, '');
    default:
      return typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
}

function cell(f: Field, raw: unknown, o: EncodeOptions): Cell {
  if (raw === null || raw === undefined) return { v: f.mode === 'REPEATED' ? [] : null };
  if (f.mode === 'REPEATED') {
    const arr = typeof raw === 'string' ? (JSON.parse(raw) as unknown[]) : (raw as unknown[]);
    return { v: arr.map((x) => cell({ ...f, mode: 'NULLABLE' }, x, o)) };
  }
  if (f.type === 'RECORD') {
    const obj = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Record<string, unknown>;
    return { v: { f: (f.fields ?? []).map((sub) => cell(sub, obj[sub.name], o)) } };
  }
  if ((f.type === 'TIMESTAMP' || f.type === 'DATETIME') && typeof raw !== 'string') return { v: String(raw) };
  return { v: scalar(f.type, raw, o) };
}

export function encodeRow(fields: Field[], row: unknown[], o: EncodeOptions): { f: Cell[] } {
  return { f: fields.map((f, i) => cell(f, row[i], o)) };
}

/** A result column's type from its values when it is an expression (no table column behind it). */
export function inferType(values: unknown[]): string {
  const v = values.find((x) => x !== null && x !== undefined);
  if (typeof v === 'bigint') return 'INTEGER';
  if (typeof v === 'number') return Number.isInteger(v) ? 'INTEGER' : 'FLOAT';
  return 'STRING';
}

/** A query parameter's value as it is stored (so comparisons with stored columns are right). */
export function parameterValue(p: { parameterType: { type: string }; parameterValue?: { value?: string | null } }): unknown {
  const v = p.parameterValue?.value;
  if (v === null || v === undefined) return null;
  switch (p.parameterType.type) {
    case 'INT64':
      return BigInt(v);
    case 'FLOAT64':
    case 'NUMERIC':
    case 'BIGNUMERIC':
      return Number(v);
    case 'BOOL':
      return v === 'true' ? 1 : 0;
    case 'TIMESTAMP':
    case 'DATETIME': {
      const ms = Date.parse(/[zZ]|[+-]\d\d(:?\d\d)?$/.test(v) ? v.replace(' ', 'T') : `${v.replace(' ', 'T')}Z`);
      if (!Number.isFinite(ms)) throw new Error(`Invalid ${p.parameterType.type} value: ${v}`);
      const micro = /\.\d{3}(\d{1,3})/.exec(v)?.[1] ?? '';
      return storedTime(ms, Number(micro.padEnd(3, '0')));
    }
    default:
      return v;
  }
}
