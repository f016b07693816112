/**
 * Snowflake's JSON result format, as the stand-in produces it from SQLite: the `rowtype` column
 * metadata derived from a column's declared type, and each value encoded as the string the driver
 * expects (numbers as decimal text, timestamps as `epochSeconds.nanoseconds`, TIMESTAMP_TZ with
 * its offset index, dates as days since the epoch, VARIANTs as JSON text).
 *
 * Storage conventions in the SQLite database behind the stand-in (declare columns with Snowflake
 * type names, e.g. `"time" TIMESTAMP_NTZ NOT NULL`, `"props" VARIANT`, `"id" NUMBER(38,0)`):
 * timestamps as ISO-8601 text (`Date.toISOString()`; a value without a zone is UTC; an integer is
 * epoch milliseconds), dates as `YYYY-MM-DD`, times as `HH:MM:SS[.fff]`, VARIANT/OBJECT/ARRAY as
 * JSON text, BOOLEAN as 0/1.
 */

export interface RowType {
  name: string;
  database: string;
  schema: string;
  table: string;
  type: string;
  precision: number | null;
  scale: number | null;
  length: number | null;
  byteLength: number | null;
  nullable: boolean;
  collation: null;
}

export type WireEncoder = (value: unknown) => string | null;

interface TypeInfo {
  type: string;
  precision: number | null;
  scale: number | null;
  length: number | null;
}

/** A Snowflake type name as SQLite kept it (`NUMBER(38,2)`, `TIMESTAMP_NTZ(9)`, `VARCHAR`) → wire type. */
export function typeFromDeclared(declared: string | null | undefined): TypeInfo | undefined {
  if (!declared) return undefined;
  const m = /^\s*([A-Za-z_ ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$/.exec(declared);
  if (!m) return undefined;
  const base = m[1]!.toUpperCase().replace(/\s+/g, ' ');
  const p1 = m[2] === undefined ? undefined : Number(m[2]);
  const p2 = m[3] === undefined ? undefined : Number(m[3]);
  switch (base) {
    case 'NUMBER':
    case 'NUMERIC':
    case 'DECIMAL':
      return { type: 'fixed', precision: p1 ?? 38, scale: p2 ?? 0, length: null };
    case 'INT':
    case 'INTEGER':
    case 'BIGINT':
    case 'SMALLINT':
    case 'TINYINT':
    case 'BYTEINT':
      return { type: 'fixed', precision: 38, scale: 0, length: null };
    case 'FLOAT':
    case 'FLOAT4':
    case 'FLOAT8':
    case 'DOUBLE':
    case 'DOUBLE PRECISION':
    case 'REAL':
      return { type: 'real', precision: null, scale: null, length: null };
    case 'VARCHAR':
    case 'CHAR':
    case 'CHARACTER':
    case 'STRING':
    case 'TEXT':
      return { type: 'text', precision: null, scale: null, length: p1 ?? 16777216 };
    case 'BOOLEAN':
      return { type: 'boolean', precision: null, scale: null, length: null };
    case 'DATE':
      return { type: 'date', precision: null, scale: null, length: null };
    case 'TIME':
      return { type: 'time', precision: 0, scale: p1 ?? 9, length: null };
    case 'DATETIME':
    case 'TIMESTAMP':
    case 'TIMESTAMP_NTZ':
      return { type: 'timestamp_ntz', precision: 0, scale: p1 ?? 9, length: null };
    case 'TIMESTAMP_LTZ':
      return { type: 'timestamp_ltz', precision: 0, scale: p1 ?? 9, length: null };
    case 'TIMESTAMP_TZ':
      return { type: 'timestamp_tz', precision: 0, scale: p1 ?? 9, length: null };
    case 'VARIANT':
      return { type: 'variant', precision: null, scale: null, length: null };
    case 'OBJECT':
      return { type: 'object', precision: null, scale: null, length: null };
    case 'ARRAY':
      return { type: 'array', precision: null, scale: null, length: null };
    case 'BINARY':
    case 'VARBINARY':
      return { type: 'binary', precision: null, scale: null, length: p1 ?? 8388608 };
    default:
      return undefined;
  }
}

/** For expressions (no declared type): what Snowflake would most likely report for this value. */
export function typeFromValue(value: unknown): TypeInfo {
  if (typeof value === 'bigint') return { type: 'fixed', precision: 38, scale: 0, length: null };
  if (typeof value === 'number') return Number.isInteger(value) ? { type: 'fixed', precision: 38, scale: 0, length: null } : { type: 'real', precision: null, scale: null, length: null };
  if (Buffer.isBuffer(value)) return { type: 'binary', precision: null, scale: null, length: 8388608 };
  return { type: 'text', precision: null, scale: null, length: 16777216 };
}

export function makeRowType(name: string, info: TypeInfo, nullable: boolean, where: { database: string; schema: string; table: string }): RowType {
  const byteLength = info.type === 'text' ? (info.length ?? 16777216) * 4 : info.type === 'binary' ? info.length : null;
  return {
    name,
    database: where.database,
    schema: where.schema,
    table: where.table,
    type: info.type,
    precision: info.precision,
    scale: info.scale,
    length: info.length,
    byteLength,
    nullable,
    collation: null,
  };
}

/** Epoch milliseconds (and the zone offset in minutes, for TIMESTAMP_TZ) of a stored time value. */
export function parseStoredTime(value: unknown): { ms: number; offsetMin: number } | undefined {
  if (typeof value === 'bigint') return { ms: Number(value), offsetMin: 0 };
  if (typeof value === 'number') return { ms: value, offsetMin: 0 };
  if (typeof value !== 'string') return undefined;
  let s = value.trim().replace(' ', 'T');
  s = s.replace(/\s+([+-]\d{2}:?\d{2})$/, '$1');
  const zone = /(Z|[+-]\d{2}:?\d{2})$/.exec(s);
  if (!zone) s += 'Z';
  const ms = Date.parse(s);
  if (!Number.isFinite(ms)) return undefined;
  let offsetMin = 0;
  if (zone && zone[1] !== 'Z') {
    const z = zone[1]!.replace(':', '');
    offsetMin = (z.startsWith('-') ? -1 : 1) * (Number(z.slice(1, 3)) * 60 + Number(z.slice(3, 5)));
  }
  return { ms, offsetMin };
}

/** `1700000000123` ms → `1700000000.123000000` (scale 9), correct for times before 1970 too. */
export function epochText(ms: number, scale: number): string {
  const sec = Math.floor(ms / 1000);
  const fracMs = ms - sec * 1000;
  if (scale === 0) return String(sec);
  const nanos = String(Math.round(fracMs * 1e6)).padStart(9, '0');
  return `${sec}.${nanos.slice(0, scale).padEnd(scale, '0')}`;
}

function jsonText(value: unknown): string {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') {
    try {
      JSON.parse(value);
      return value;
    } catch {
      return JSON.stringify(value);
    }
  }
  return JSON.stringify(value);
}

export function encoderFor(rt: Pick<RowType, 'type' | 'scale'>): WireEncoder {
  const scale = rt.scale ?? 0;
  const wrap = (fn: (v: unknown) => string | null): WireEncoder => (v) => (v === null || v === undefined ? null : fn(v));
  switch (rt.type) {
    case 'fixed':
      return wrap((v) => {
        if (typeof v === 'bigint') return scale > 0 ? `${v}.${'0'.repeat(scale)}` : v.toString();
        const n = Number(v);
        return scale > 0 ? n.toFixed(scale) : Number.isInteger(n) ? n.toFixed(0) : String(Math.trunc(n));
      });
    case 'real':
      return wrap((v) => String(Number(v)));
    case 'boolean':
      return wrap((v) => (v === true || v === 1 || v === 1n || v === '1' || String(v).toLowerCase() === 'true' ? '1' : '0'));
    case 'date':
      return wrap((v) => {
        const t = parseStoredTime(typeof v === 'string' && v.length === 10 ? `${v}T00:00:00Z` : v);
        return t ? String(Math.floor(t.ms / 86_400_000)) : String(v);
      });
    case 'time':
      return wrap((v) => {
        const m = /^(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d+))?$/.exec(String(v));
        if (!m) return String(v);
        const secs = Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]);
        return `${secs}.${(m[4] ?? '').padEnd(9, '0').slice(0, 9)}`;
      });
    case 'timestamp_ntz':
    case 'timestamp_ltz':
      return wrap((v) => {
        const t = parseStoredTime(v);
        return t ? epochText(t.ms, scale) : String(v);
      });
    case 'timestamp_tz':
      return wrap((v) => {
        const t = parseStoredTime(v);
        return t ? `${epochText(t.ms, scale)} ${1440 + t.offsetMin}` : String(v);
      });
    case 'variant':
    case 'object':
    case 'array':
      return wrap(jsonText);
    case 'binary':
      return wrap((v) => (Buffer.isBuffer(v) ? v : Buffer.from(String(v), 'utf8')).toString('hex').toUpperCase());
    default:
      return wrap((v) => (typeof v === 'bigint' ? v.toString() : Buffer.isBuffer(v) ? v.toString('utf8') : String(v)));
  }
}

/** The session parameters the driver reads from every result (output formats, time zone). */
export const RESULT_PARAMETERS = [
  { name: 'TIMEZONE', value: 'UTC' },
  { name: 'TIMESTAMP_OUTPUT_FORMAT', value: 'YYYY-MM-DD HH24:MI:SS.FF3 TZHTZM' },
  { name: 'TIMESTAMP_NTZ_OUTPUT_FORMAT', value: 'YYYY-MM-DD HH24:MI:SS.FF3' },
  { name: 'TIMESTAMP_LTZ_OUTPUT_FORMAT', value: '' },
  { name: 'TIMESTAMP_TZ_OUTPUT_FORMAT', value: '' },
  { name: 'DATE_OUTPUT_FORMAT', value: 'YYYY-MM-DD' },
  { name: 'TIME_OUTPUT_FORMAT', value: 'HH24:MI:SS' },
  { name: 'BINARY_OUTPUT_FORMAT', value: 'HEX' },
  { name: 'CLIENT_RESULT_CHUNK_SIZE', value: 160 },
  { name: 'CLIENT_PREFETCH_THREADS', value: 4 },
  { name: 'JS_TREAT_INTEGER_AS_BIGINT', value: false },
];

export const LOGIN_PARAMETERS = [
  ...RESULT_PARAMETERS,
  { name: 'CLIENT_SESSION_KEEP_ALIVE', value: false },
  { name: 'CLIENT_SESSION_KEEP_ALIVE_HEARTBEAT_FREQUENCY', value: 3600 },
  { name: 'QUERY_CONTEXT_CACHE_SIZE', value: 5 },
  { name: 'CLIENT_STAGE_ARRAY_BINDING_THRESHOLD', value: 65280 },
];
