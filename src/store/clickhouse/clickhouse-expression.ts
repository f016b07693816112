/**
 * The `where` / `on` expression language (domain/where-expression.ts) compiled to ClickHouse SQL
 * with the semantics of domain/where-evaluate.ts: no implicit coercion, `!=` is `not ==`, a
 * missing property is undefined, lists count under each distinct element. Every value is carried
 * as four SQL expressions — type (see clickhouse-properties.ts), number, string form, canonical
 * JSON — read from the typed property arrays. Pure: builds text, runs nothing.
 */
import type { Expr } from '../../domain/where-expression.js';
import { T_ARRAY, T_BOOL, T_NULL, T_NUMBER, T_STRING, T_UNDEFINED, typedValue } from './clickhouse-properties.js';
import { float, str } from './clickhouse-sql.js';

interface Elements {
  types: string;
  nums: string;
  strs: string;
  canon: string;
}

interface SqlValue {
  t: string;
  n: string;
  s: string;
  c: string;
  /** Array-typed property values: their elements (for `in` and list segments). */
  elems?: Elements;
  /** A list literal's items (evaluated one by one). */
  items?: SqlValue[];
}

/** SQL for the export record's fixed fields, which `properties["…"]` can name too. */
export interface ExpressionColumns {
  /** The event's distinct_id as read-back returns it (the resolved id). */
  distinctId: string;
}

const UNDEF: SqlValue = { t: `toUInt8(${T_UNDEFINED})`, n: 'toFloat64(0)', s: "''", c: "''" };

function typed(t: number, n: string, s: string, c = "''"): SqlValue {
  return { t: `toUInt8(${t})`, n, s, c };
}

function bool(cond: string): SqlValue {
  const b = `toUInt8(${cond})`;
  return { t: `toUInt8(${T_BOOL})`, n: `toFloat64(${b})`, s: `if(${b} = 1, 'true', 'false')`, c: "''" };
}

/** JSON.stringify of a string, in SQL (control characters other than \\n \\r \\t \\b \\f are not escaped). */
function jsonQuote(s: string): string {
  let out = s;
  for (const [from, to] of [['\\', '\\\\'], ['"', '\\"'], ['\n', '\\n'], ['\r', '\\r'], ['\t', '\\t'], ['\b', '\\b'], ['\f', '\\f']]) {
    out = `replaceAll(${out}, ${str(from!)}, ${str(to!)})`;
  }
  return `concat('"', ${out}, '"')`;
}

/** A list item's JSON text: as JSON.stringify (`s`) or canonical (`c`) writes it inside an array. */
function jsonText(v: SqlValue, form: 's' | 'c'): string {
  return `multiIf(${v.t} IN (${T_UNDEFINED}, ${T_NULL}), 'null', ${v.t} = ${T_STRING}, ${jsonQuote(v.s)}, ${v.t} IN (${T_BOOL}, ${T_NUMBER}), ${v.s}, ${form === 's' ? v.s : v.c})`;
}

/** `cond ? a : b` per component. */
function choose(cond: string, a: SqlValue, b: SqlValue): SqlValue {
  return { t: `if(${cond}, ${a.t}, ${b.t})`, n: `if(${cond}, ${a.n}, ${b.n})`, s: `if(${cond}, ${a.s}, ${b.s})`, c: `if(${cond}, ${a.c}, ${b.c})` };
}

function literal(v: string | number | boolean | null): SqlValue {
  const tv = typedValue(v);
  return typed(tv.type, float(tv.num), str(tv.str));
}

/** JS's String(number) for computed numbers (stored numbers carry their exact JS form). */
function numberText(n: string): string {
  // + 0 turns -0 into 0, as String(-0) is "0".
  return `toString((${n}) + 0)`;
}

function property(name: string, cols: ExpressionColumns): SqlValue {
  if (name === 'time') return typed(T_NUMBER, 'time / 1000', numberText('time / 1000'));
  if (name === 'distinct_id') return typed(T_STRING, 'toFloat64(0)', cols.distinctId);
  if (name === '$insert_id') return typed(T_STRING, 'toFloat64(0)', 'insert_id');
  const i = `indexOf(prop_keys, ${str(name)})`;
  return {
    t: `prop_types[${i}]`,
    n: `prop_nums[${i}]`,
    s: `prop_strs[${i}]`,
    c: `prop_canon[${i}]`,
    elems: { types: `prop_elem_types[${i}]`, nums: `prop_elem_nums[${i}]`, strs: `prop_elem_strs[${i}]`, canon: `prop_elem_canon[${i}]` },
  };
}

export function truthySql(v: SqlValue): string {
  return `multiIf(${v.t} IN (${T_UNDEFINED}, ${T_NULL}), 0, ${v.t} IN (${T_BOOL}, ${T_NUMBER}), ${v.n} != 0, ${v.t} = ${T_STRING}, ${v.s} != '', ${v.t} = ${T_ARRAY}, ${v.c} != '[]', 1)`;
}

/** where-evaluate `equal` on two typed values given as SQL components. */
function equalParts(at: string, an: string, as: string, ac: string, bt: string, bn: string, bs: string, bc: string): string {
  return (
    `multiIf(${at} = ${T_UNDEFINED} OR ${bt} = ${T_UNDEFINED}, 0, ${at} != ${bt}, 0, ${at} = ${T_NULL}, 1, ` +
    `${at} IN (${T_BOOL}, ${T_NUMBER}), ${an} = ${bn}, ${at} = ${T_STRING}, ${as} = ${bs}, ${ac} = ${bc})`
  );
}

function equal(a: SqlValue, b: SqlValue): string {
  return equalParts(a.t, a.n, a.s, a.c, b.t, b.n, b.s, b.c);
}

/**
 * A value as one string that is equal exactly when where-evaluate's `equal` holds (for defined
 * values): type, then number (-0 folded into 0), string or canonical JSON.
 */
function equalityKey(t: string, n: string, s: string, c: string): string {
  return `concat(toString(${t}), ':', multiIf(${t} IN (${T_BOOL}, ${T_NUMBER}), toString((${n}) + 0), ${t} = ${T_STRING}, ${s}, ${t} = ${T_NULL}, '', ${c}))`;
}

function contains(needle: SqlValue, hay: SqlValue): string {
  const inString = `(${hay.t} = ${T_STRING} AND ${needle.t} = ${T_STRING} AND position(${hay.s}, ${needle.s}) > 0)`;
  if (hay.items) return hay.items.length === 0 ? '0' : `(${hay.items.map((item) => equal(needle, item)).join(' OR ')})`;
  if (!hay.elems) return inString;
  const e = hay.elems;
  // 18.16 lambdas cannot capture outer columns reliably: compare element keys with has().
  const keys = `arrayMap((et, en, es, ec) -> ${equalityKey('et', 'en', 'es', 'ec')}, ${e.types}, ${e.nums}, ${e.strs}, ${e.canon})`;
  const inArray = `(${hay.t} = ${T_ARRAY} AND ${needle.t} != ${T_UNDEFINED} AND has(${keys}, ${equalityKey(needle.t, needle.n, needle.s, needle.c)}))`;
  return `(${inArray} OR ${inString})`;
}

function ordered(op: string, a: SqlValue, b: SqlValue): string {
  return `multiIf(${a.t} = ${T_NUMBER} AND ${b.t} = ${T_NUMBER}, ${a.n} ${op} ${b.n}, ${a.t} = ${T_STRING} AND ${b.t} = ${T_STRING}, ${a.s} ${op} ${b.s}, 0)`;
}

function arithmetic(op: string, a: SqlValue, b: SqlValue): SqlValue {
  const bothNumbers = `${a.t} = ${T_NUMBER} AND ${b.t} = ${T_NUMBER}`;
  let n: string;
  let defined = bothNumbers;
  switch (op) {
    case '/':
      n = `${a.n} / ${b.n}`;
      defined = `${bothNumbers} AND ${b.n} != 0`;
      break;
    case '%':
      // JS remainder: the sign of the dividend (ClickHouse's modulo truncates to integers).
      n = `${a.n} - ${b.n} * trunc(${a.n} / ${b.n})`;
      defined = `${bothNumbers} AND ${b.n} != 0`;
      break;
    default:
      n = `${a.n} ${op} ${b.n}`;
  }
  const num = typed(T_NUMBER, n, numberText(n));
  const result = choose(defined, num, UNDEF);
  if (op !== '+') return result;
  const concat = typed(T_STRING, 'toFloat64(0)', `concat(${a.s}, ${b.s})`);
  return choose(`${a.t} = ${T_STRING} AND ${b.t} = ${T_STRING}`, concat, result);
}

/** JS Number(string): trimmed, decimal or exponent form, finite. */
function numberFromString(v: SqlValue): SqlValue {
  const trimmed = `replaceRegexpAll(${v.s}, '^\\\\s+|\\\\s+$', '')`;
  const valid = `match(${trimmed}, '^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$')`;
  // toFloat64OrZero does not take a leading '+'.
  const n = `toFloat64OrZero(replaceRegexpOne(${trimmed}, '^[+]', ''))`;
  return choose(`${v.t} = ${T_STRING} AND ${valid}`, typed(T_NUMBER, n, numberText(n)), UNDEF);
}

function call(fn: string, v: SqlValue): SqlValue {
  switch (fn) {
    case 'defined':
      return bool(`${v.t} NOT IN (${T_UNDEFINED}, ${T_NULL})`);
    case 'boolean':
      return bool(truthySql(v));
    case 'number': {
      const fromBool = typed(T_NUMBER, v.n, `if(${v.n} = 1, '1', '0')`);
      return choose(`${v.t} = ${T_NUMBER}`, v, choose(`${v.t} = ${T_BOOL}`, fromBool, numberFromString(v)));
    }
    case 'string':
      return choose(`${v.t} IN (${T_UNDEFINED}, ${T_NULL})`, UNDEF, typed(T_STRING, 'toFloat64(0)', v.s));
    default: {
      // floor, round (JS: half up), ceil
      const n = fn === 'round' ? `floor(${v.n} + 0.5)` : `${fn}(${v.n})`;
      return choose(`${v.t} = ${T_NUMBER}`, typed(T_NUMBER, n, numberText(n)), UNDEF);
    }
  }
}

function compile(expr: Expr, cols: ExpressionColumns): SqlValue {
  switch (expr.kind) {
    case 'literal':
      return literal(expr.value);
    case 'property':
      return property(expr.name, cols);
    case 'list': {
      const items = expr.items.map((item) => compile(item, cols));
      const text = `concat('[', ${items.length === 0 ? "''" : `arrayStringConcat([${items.map((i) => jsonText(i, 's')).join(', ')}], ',')`}, ']')`;
      const canon = `concat('[', ${items.length === 0 ? "''" : `arrayStringConcat([${items.map((i) => jsonText(i, 'c')).join(', ')}], ',')`}, ']')`;
      return { ...typed(T_ARRAY, 'toFloat64(0)', text, canon), items };
    }
    case 'not':
      return bool(`NOT ${truthySql(compile(expr.operand, cols))}`);
    case 'negate': {
      const v = compile(expr.operand, cols);
      return choose(`${v.t} = ${T_NUMBER}`, typed(T_NUMBER, `-(${v.n})`, numberText(`-(${v.n})`)), UNDEF);
    }
    case 'call':
      return call(expr.fn, compile(expr.arg, cols));
    case 'binary': {
      const a = compile(expr.left, cols);
      const b = compile(expr.right, cols);
      switch (expr.op) {
        case 'and':
          return bool(`${truthySql(a)} AND ${truthySql(b)}`);
        case 'or':
          return bool(`${truthySql(a)} OR ${truthySql(b)}`);
        case '==':
          return bool(equal(a, b));
        case '!=':
          return bool(`NOT ${equal(a, b)}`);
        case 'in':
          return bool(contains(a, b));
        case '>':
        case '>=':
        case '<':
        case '<=':
          return bool(ordered(expr.op, a, b));
        default:
          return arithmetic(expr.op, a, b);
      }
    }
  }
}

/** A UInt8 condition: the expression is truthy for the row. */
export function whereSql(expr: Expr, cols: ExpressionColumns): string {
  return truthySql(compile(expr, cols));
}

/** where-evaluate's segment label of one value (segmentation.ts labelOf). */
function labelParts(t: string, s: string): string {
  return `multiIf(${t} = ${T_UNDEFINED}, 'undefined', ${t} = ${T_NULL}, 'null', ${s})`;
}

/**
 * An Array(String) of the segment labels the row counts under (segmentation.ts segmentLabels):
 * one label, or each distinct element label of a list (`['undefined']` for an empty one).
 */
export function segmentLabelsSql(expr: Expr, cols: ExpressionColumns): string {
  const v = compile(expr, cols);
  const single = `[${labelParts(v.t, v.s)}]`;
  let listLabels: string;
  if (v.items) listLabels = v.items.length === 0 ? 'emptyArrayString()' : `[${v.items.map((i) => labelParts(i.t, i.s)).join(', ')}]`;
  else if (v.elems) listLabels = `arrayMap((et, es) -> ${labelParts('et', 'es')}, ${v.elems.types}, ${v.elems.strs})`;
  else return single;
  const distinct = `arrayDistinct(${listLabels})`;
  return `if(${v.t} = ${T_ARRAY}, if(empty(${distinct}), ['undefined'], ${distinct}), ${single})`;
}

