/**
 * Renders a where plan (../where-plan.ts) and an `on` segment label as SQL over `events e`:
 * SQLite's JSON1 (`json_type`/`json_extract` on text) and PostgreSQL's jsonb. Every condition
 * renders as a non-null boolean (CASE … ELSE FALSE), so `not` of a missing property is true,
 * exactly as where-evaluate.ts has it. Values travel as bindings, never as SQL text.
 */
import type { Knex } from 'knex';
import type { Dialect } from '../../db/knex.js';
import type { Cond, PropRef, Scalar } from '../where-plan.js';

export type Binding = Knex.RawBinding;

export interface Fragment {
  sql: string;
  bindings: Binding[];
}

type Atom = Exclude<Cond, { k: 'const' | 'and' | 'or' | 'not' }>;

const COLUMN_SQL = { time: '(e.time / 1000.0)', distinct_id: 'e.distinct_id', insert_id: 'e.insert_id' } as const;

function jsonPath(name: string): string {
  return `$."${name}"`;
}

/** A condition on one of the event's own columns (time is a number, the ids strings). */
function columnCond(d: Dialect, c: Atom, column: 'time' | 'distinct_id' | 'insert_id'): Fragment {
  const col = COLUMN_SQL[column];
  const isNumber = column === 'time';
  const no: Fragment = { sql: 'FALSE', bindings: [] };
  switch (c.k) {
    case 'eq':
      return (isNumber ? typeof c.value === 'number' : typeof c.value === 'string') ? { sql: `(${col} = ?)`, bindings: [c.value] } : no;
    case 'cmp':
      return (isNumber ? typeof c.value === 'number' : typeof c.value === 'string') ? { sql: `(${col} ${c.op} ?)`, bindings: [c.value] } : no;
    case 'contains':
      // Only a string haystack can contain; `needle in time` is never true.
      if (isNumber || typeof c.value !== 'string') return no;
      return { sql: d === 'postgres' ? `(strpos(${col}, ?::text) > 0)` : `(instr(${col}, ?) > 0)`, bindings: [c.value] };
    case 'defined':
      return { sql: 'TRUE', bindings: [] };
    case 'truthy':
      return { sql: isNumber ? '(e.time <> 0)' : `(${col} <> '')`, bindings: [] };
  }
}

function sqliteAtom(c: Atom, name: string): Fragment {
  const p = jsonPath(name);
  const T = 'json_type(e.properties, ?)';
  const V = 'json_extract(e.properties, ?)';
  const scalarTest = (v: Scalar, type: string, value: string): Fragment => {
    if (v === null) return { sql: `${type} = 'null'`, bindings: [] };
    if (typeof v === 'boolean') return { sql: `${type} = '${v ? 'true' : 'false'}'`, bindings: [] };
    if (typeof v === 'number') return { sql: `${type} IN ('integer', 'real') AND ${value} = ?`, bindings: [v] };
    return { sql: `${type} = 'text' AND ${value} = ?`, bindings: [v] };
  };
  switch (c.k) {
    case 'eq': {
      const t = scalarTest(c.value, T, V);
      const bindings = [p, ...(t.sql.includes(V) ? [p] : []), ...t.bindings];
      return { sql: `(CASE WHEN ${t.sql} THEN TRUE ELSE FALSE END)`, bindings };
    }
    case 'cmp': {
      const types = typeof c.value === 'number' ? "IN ('integer', 'real')" : "= 'text'";
      return { sql: `(CASE WHEN ${T} ${types} AND ${V} ${c.op} ? THEN TRUE ELSE FALSE END)`, bindings: [p, p, c.value] };
    }
    case 'contains': {
      const elem = scalarTest(c.value, 'j.type', 'j.value');
      const inArray = `EXISTS (SELECT 1 FROM json_each(e.properties, ?) j WHERE ${elem.sql})`;
      if (typeof c.value === 'string') {
        return {
          sql: `(CASE ${T} WHEN 'array' THEN ${inArray} WHEN 'text' THEN instr(${V}, ?) > 0 ELSE FALSE END)`,
          bindings: [p, p, ...elem.bindings, p, c.value],
        };
      }
      return { sql: `(CASE ${T} WHEN 'array' THEN ${inArray} ELSE FALSE END)`, bindings: [p, p, ...elem.bindings] };
    }
    case 'defined':
      return { sql: `(CASE WHEN ${T} IS NOT NULL AND ${T} <> 'null' THEN TRUE ELSE FALSE END)`, bindings: [p, p] };
    case 'truthy':
      return {
        sql:
          `(CASE ${T} WHEN 'true' THEN TRUE WHEN 'object' THEN TRUE WHEN 'text' THEN ${V} <> '' ` +
          `WHEN 'integer' THEN ${V} <> 0 WHEN 'real' THEN ${V} <> 0 WHEN 'array' THEN json_array_length(e.properties, ?) > 0 ELSE FALSE END)`,
        bindings: [p, p, p, p, p],
      };
  }
}

function pgAtom(c: Atom, name: string): Fragment {
  const J = '(e.properties -> ?::text)';
  const TY = `jsonb_typeof(${J})`;
  switch (c.k) {
    case 'eq':
      // jsonb equality is typed: "5" never equals 5, 1 equals 1.0 (as in JS).
      return { sql: `(CASE WHEN ${J} = ?::jsonb THEN TRUE ELSE FALSE END)`, bindings: [name, JSON.stringify(c.value)] };
    case 'cmp':
      if (typeof c.value === 'number') {
        return { sql: `(CASE WHEN ${TY} = 'number' THEN (${J})::numeric ${c.op} ?::numeric ELSE FALSE END)`, bindings: [name, name, c.value] };
      }
      // COLLATE "C": code-point order like JS (bytes of UTF-8), whatever the database's locale.
      return {
        sql: `(CASE WHEN ${TY} = 'string' THEN (e.properties ->> ?::text) COLLATE "C" ${c.op} ?::text COLLATE "C" ELSE FALSE END)`,
        bindings: [name, name, c.value],
      };
    case 'contains': {
      const inArray = `${J} @> ?::jsonb`;
      if (typeof c.value === 'string') {
        return {
          sql: `(CASE ${TY} WHEN 'array' THEN ${inArray} WHEN 'string' THEN strpos(e.properties ->> ?::text, ?::text) > 0 ELSE FALSE END)`,
          bindings: [name, name, JSON.stringify([c.value]), name, c.value],
        };
      }
      return { sql: `(CASE ${TY} WHEN 'array' THEN ${inArray} ELSE FALSE END)`, bindings: [name, name, JSON.stringify([c.value])] };
    }
    case 'defined':
      return { sql: `(CASE WHEN ${TY} IS NOT NULL AND ${TY} <> 'null' THEN TRUE ELSE FALSE END)`, bindings: [name, name] };
    case 'truthy':
      return {
        sql:
          `(CASE ${TY} WHEN 'boolean' THEN ${J} = 'true'::jsonb WHEN 'object' THEN TRUE WHEN 'string' THEN ${J} <> '""'::jsonb ` +
          `WHEN 'number' THEN ${J} <> '0'::jsonb WHEN 'array' THEN jsonb_array_length(${J}) > 0 ELSE FALSE END)`,
        bindings: [name, name, name, name, name],
      };
  }
}

function atom(d: Dialect, c: Atom, prop: PropRef): Fragment {
  if (prop.kind === 'column') return columnCond(d, c, prop.column);
  return d === 'postgres' ? pgAtom(c, prop.name) : sqliteAtom(c, prop.name);
}

export function whereSql(d: Dialect, c: Cond): Fragment {
  switch (c.k) {
    case 'const':
      return { sql: c.value ? 'TRUE' : 'FALSE', bindings: [] };
    case 'and':
    case 'or': {
      const l = whereSql(d, c.left);
      const r = whereSql(d, c.right);
      return { sql: `(${l.sql} ${c.k.toUpperCase()} ${r.sql})`, bindings: [...l.bindings, ...r.bindings] };
    }
    case 'not': {
      const i = whereSql(d, c.item);
      return { sql: `(NOT ${i.sql})`, bindings: i.bindings };
    }
    default:
      return atom(d, c, c.prop);
  }
}
