/**
 * The `where` / `on` expression language (domain/where-expression.ts) compiled to ClickHouse SQL
 * with the semantics of domain/where-evaluate.ts: no implicit coercion, `!=` is `not ==`, a
 * missing property is undefined, lists count under each distinct element. Every value is carried
 * as four SQL expressions — type (see clickhouse-properties.ts), number, string form, canonical
 * JSON — read from the typed property arrays. Pure: builds text, runs nothing.
 *
 * The SQL grows linearly with the expression. Most operators read an operand's components more
 * than once, so pasting operands into their parents would double the text at every level (ten
 * `and`s made 1.5 MB). Three things keep it linear: a subexpression without properties is
 * evaluated here and written as a literal; a boolean carries its condition, which `and`, `or`,
 * `not` and the final filter use once; and an operand too long to repeat is passed into a
 * one-element arrayMap as a lambda parameter, so its text appears once. Aliases cannot do this:
 * 18.16 expands every alias where it is used before it checks the tree's size.
 */
import { evaluate } from '../../domain/where-evaluate.js';
import { hasProperty, type Expr } from '../../domain/where-expression.js';
import { T_ARRAY, T_BOOL, T_NULL, T_NUMBER, T_STRING, T_UNDEFINED, typedValue, type TypedValue } from './clickhouse-properties.js';
import { float, str } from './clickhouse-sql.js';

interface Elements {
  types: string;
  nums: string;
  strs: string;
  canon: string;
}

/**
 * A value as SQL: each of `t`, `n`, `s`, `c` is one operand — a name, a literal, a call, or a
 * bracketed expression (perhaps negated) — so a consumer may paste it beside any operator
 * (`cond` is not: it is bracketed where it is used).
 */
interface SqlValue {
  t: string;
  n: string;
  s: string;
  c: string;
  /** Array-typed property values: their elements (for `in` and list segments). */
  elems?: Elements;
  /** A list literal's items (evaluated one by one). */
  items?: SqlValue[];
  /** A boolean's UInt8 condition: its truthiness, read without the other components. */
  cond?: string;
  /** A value computed in a lambda: the one tuple text its components are read from. */
  tuple?: string;
  /** A constant's value (its components are literals, fit to stand inside a lambda body). */
  known?: TypedValue;
}

/** SQL for the export record's fixed fields, which `properties["…"]` can name too. */
export interface ExpressionColumns {
  /** The event's distinct_id as read-back returns it (the resolved id). */
  distinctId: string;
}

const UNDEF: SqlValue = { t: `toUInt8(${T_UNDEFINED})`, n: 'toFloat64(0)', s: "''", c: "''", known: typedValue(undefined) };

function typed(t: number, n: string, s: string, c = "''"): SqlValue {
  return { t: `toUInt8(${t})`, n, s, c };
}

function bool(cond: string): SqlValue {
  const b = `toUInt8(${cond})`;
  return { t: `toUInt8(${T_BOOL})`, n: `toFloat64(${b})`, s: `if(${b} = 1, 'true', 'false')`, c: "''", cond };
}

/** JSON.stringify's escapes of one character, besides \u00XX for the other control characters. */
const JSON_ESCAPES: [string, string][] = [['"', '\\"'], ['\\', '\\\\'], ['\n', '\\n'], ['\r', '\\r'], ['\t', '\\t'], ['\b', '\\b'], ['\f', '\\f']];

/** JSON.stringify of one character `jc`: its short escape, \u00XX for the other control characters, else itself. */
const JSON_CHARACTER = `multiIf(${JSON_ESCAPES.map(([from, to]) => `jc = ${str(from)}, ${str(to)}`).join(', ')}, jc < ' ', concat(${str('\\u00')}, lower(hex(jc))), jc)`;

/** JSON.stringify of a string, in SQL: character by character (a UTF-8 sequence has no byte below 0x20). */
function jsonQuote(s: string): string {
  return `concat('"', arrayStringConcat(arrayMap(jc -> ${JSON_CHARACTER}, extractAll(${s}, '(?s).'))), '"')`;
}

/** A list item's JSON text: as JSON.stringify (`s`) or canonical (`c`) writes it inside an array. */
function jsonText(v: SqlValue, form: 's' | 'c'): string {
  return `multiIf(${v.t} IN (${T_UNDEFINED}, ${T_NULL}), 'null', ${v.t} = ${T_STRING}, ${jsonQuote(v.s)}, ${v.t} IN (${T_BOOL}, ${T_NUMBER}), ${v.s}, ${form === 's' ? v.s : v.c})`;
}

/** `cond ? a : b` per component. */
function choose(cond: string, a: SqlValue, b: SqlValue): SqlValue {
  return { t: `if(${cond}, ${a.t}, ${b.t})`, n: `if(${cond}, ${a.n}, ${b.n})`, s: `if(${cond}, ${a.s}, ${b.s})`, c: `if(${cond}, ${a.c}, ${b.c})` };
}

/** A constant (a literal or a folded subexpression); lists keep their items for `in`. */
function literal(v: unknown): SqlValue {
  if (v === undefined) return UNDEF;
  const tv = typedValue(v);
  const value: SqlValue = { ...typed(tv.type, float(tv.num), str(tv.str), str(tv.canon)), known: tv };
  if (Array.isArray(v)) value.items = v.map(literal);
  return value;
}

/** JS's String(number) for computed numbers (stored numbers carry their exact JS form). */
function numberText(n: string): string {
  // + 0 turns -0 into 0, as String(-0) is "0"; JS writes a positive exponent with a sign (1e+21).
  return `replaceRegexpOne(toString((${n}) + 0), 'e([0-9])', 'e+\\\\1')`;
}

function property(name: string, cols: ExpressionColumns): SqlValue {
  // Bracketed, as every component is: unbracketed, `t / time` read as `t / time / 1000`.
  if (name === 'time') return typed(T_NUMBER, '(time / 1000)', numberText('time / 1000'));
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

function truthySql(v: SqlValue): string {
  if (v.cond !== undefined) return v.cond;
  return `multiIf(${v.t} IN (${T_UNDEFINED}, ${T_NULL}), 0, ${v.t} IN (${T_BOOL}, ${T_NUMBER}), ${v.n} != 0 AND NOT isNaN(${v.n}), ${v.t} = ${T_STRING}, ${v.s} != '', ${v.t} = ${T_ARRAY}, ${v.c} != '[]', 1)`;
}

/** where-evaluate `equal` on two typed values given as SQL components. */
function equalParts(at: string, an: string, as: string, ac: string, bt: string, bn: string, bs: string, bc: string): string {
  return (
    `multiIf(${at} = ${T_UNDEFINED} OR ${bt} = ${T_UNDEFINED}, 0, ${at} != ${bt}, 0, ${at} = ${T_NULL}, 1, ` +
    `${at} IN (${T_BOOL}, ${T_NUMBER}), ${an} = ${bn}, ${at} = ${T_STRING}, ${as} = ${bs}, ${ac} = ${bc})`
  );
}

function equal(a: SqlValue, b: SqlValue): string {
  if (b.known) return equalsConstant(a, b.known);
  if (a.known) return equalsConstant(b, a.known);
  return equalParts(a.t, a.n, a.s, a.c, b.t, b.n, b.s, b.c);
}

/** `equal` against a constant: the type is known, so one comparison of one component. */
function equalsConstant(v: SqlValue, k: TypedValue): string {
  switch (k.type) {
    case T_UNDEFINED:
      return '0';
    case T_NULL:
      return `(${v.t} = ${T_NULL})`;
    case T_BOOL:
    case T_NUMBER:
      return `(${v.t} = ${k.type} AND ${v.n} = ${float(k.num)})`;
    case T_STRING:
      return `(${v.t} = ${T_STRING} AND ${v.s} = ${str(k.str)})`;
    default:
      return `(${v.t} = ${k.type} AND ${v.c} = ${str(k.canon)})`;
  }
}

/** `in` a constant list: strings by one IN set, other items one by one. */
function inConstants(needle: SqlValue, items: SqlValue[]): string {
  const strings = new Set(items.filter((i) => i.known!.type === T_STRING).map((i) => str(i.known!.str)));
  const parts = items.filter((i) => i.known!.type !== T_STRING).map((i) => equalsConstant(needle, i.known!));
  if (strings.size > 0) parts.push(`(${needle.t} = ${T_STRING} AND ${needle.s} IN (${[...strings].join(', ')}))`);
  return parts.length === 0 ? '0' : `(${parts.join(' OR ')})`;
}

/**
 * A value as one string that is equal exactly when where-evaluate's `equal` holds (for defined
 * values): type, then number (-0 folded into 0), string or canonical JSON.
 */
function equalityKey(t: string, n: string, s: string, c: string): string {
  return `concat(toString(${t}), ':', multiIf(${t} IN (${T_BOOL}, ${T_NUMBER}), toString((${n}) + 0), ${t} = ${T_STRING}, ${s}, ${t} = ${T_NULL}, '', ${c}))`;
}

function contains(needle: SqlValue, hay: SqlValue): string {
  if (hay.known && hay.items) return inConstants(needle, hay.items);
  if (hay.items) return `(${hay.items.map((item) => equal(needle, item)).join(' OR ')})`;
  const inString = `(${hay.t} = ${T_STRING} AND ${needle.t} = ${T_STRING} AND position(${hay.s}, ${needle.s}) > 0)`;
  if (!hay.elems) return inString;
  const e = hay.elems;
  // 18.16 lambdas cannot capture outer columns reliably: compare element keys with has().
  const keys = `arrayMap((et, en, es, ec) -> ${equalityKey('et', 'en', 'es', 'ec')}, ${e.types}, ${e.nums}, ${e.strs}, ${e.canon})`;
  const inArray = `(${hay.t} = ${T_ARRAY} AND ${needle.t} != ${T_UNDEFINED} AND has(${keys}, ${equalityKey(needle.t, needle.n, needle.s, needle.c)}))`;
  return `(${inArray} OR ${inString})`;
}

type Order = '>' | '>=' | '<' | '<=';
const FLIPPED: Record<Order, Order> = { '>': '<', '>=': '<=', '<': '>', '<=': '>=' };

function ordered(op: Order, a: SqlValue, b: SqlValue): string {
  if (b.known) return orderedConstant(op, a, b.known);
  if (a.known) return orderedConstant(FLIPPED[op], b, a.known);
  return `multiIf(${a.t} = ${T_NUMBER} AND ${b.t} = ${T_NUMBER}, ${a.n} ${op} ${b.n}, ${a.t} = ${T_STRING} AND ${b.t} = ${T_STRING}, ${a.s} ${op} ${b.s}, 0)`;
}

/** `ordered` against a constant: only a number or a string orders, against its own type. */
function orderedConstant(op: Order, v: SqlValue, k: TypedValue): string {
  if (k.type === T_NUMBER) return `(${v.t} = ${T_NUMBER} AND ${v.n} ${op} ${float(k.num)})`;
  if (k.type === T_STRING) return `(${v.t} = ${T_STRING} AND ${v.s} ${op} ${str(k.str)})`;
  return '0';
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
  return choose(`${v.t} = ${T_STRING} AND ${valid} AND isFinite(${n})`, typed(T_NUMBER, n, numberText(n)), UNDEF);
}

function call(fn: string, v: SqlValue): SqlValue {
  switch (fn) {
    case 'defined':
      return bool(`${v.t} NOT IN (${T_UNDEFINED}, ${T_NULL})`);
    case 'boolean':
      return bool(truthySql(v));
    case 'number': {
      const fromBool = typed(T_NUMBER, v.n, `if(${v.n} = 1, '1', '0')`);
      // JS number() gives undefined for Infinity and NaN (`1e999` is a literal, `n * 1e999` computed).
      return choose(`${v.t} = ${T_NUMBER}`, choose(`isFinite(${v.n})`, v, UNDEF), choose(`${v.t} = ${T_BOOL}`, fromBool, numberFromString(v)));
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

/** Longest operand text pasted into a parent as it is; pushed-down filters stay well under it. */
const INLINE_LIMIT = 4_000;

function textLength(v: SqlValue): number {
  if (v.known) return 0;
  const items = v.items?.reduce((sum, item) => sum + textLength(item), 0) ?? 0;
  return v.t.length + v.n.length + v.s.length + v.c.length + items;
}

/** Lambda parameter names, unique within one compiled expression. */
let paramSeq = 0;

interface Binding {
  params: string[];
  /** One-element arrays, one per parameter. */
  args: string[];
}

function tupleValue(x: string, withElements: boolean): SqlValue {
  const at = (k: number) => `tupleElement(${x}, ${k})`;
  const elems = withElements ? { types: at(5), nums: at(6), strs: at(7), canon: at(8) } : undefined;
  return { t: at(1), n: at(2), s: at(3), c: at(4), elems, tuple: x };
}

function tupleText(v: SqlValue): string {
  const parts = [v.t, v.n, v.s, v.c];
  if (v.elems) parts.push(v.elems.types, v.elems.nums, v.elems.strs, v.elems.canon);
  return `tuple(${parts.join(', ')})`;
}

/** The value as the lambda body sees it: a parameter (constants stay as they are, lists per item). */
function bindParameter(v: SqlValue, b: Binding): SqlValue {
  if (v.known) return v;
  if (v.items) return listValue(v.items.map((item) => bindParameter(item, b)));
  const p = `_p${paramSeq++}`;
  b.params.push(p);
  b.args.push(`[${v.cond ?? v.tuple ?? tupleText(v)}]`);
  return v.cond !== undefined ? bool(p) : tupleValue(p, v.elems !== undefined);
}

function lambda(b: Binding, body: string): string {
  return `arrayMap((${b.params.join(', ')}) -> ${body}, ${b.args.join(', ')})[1]`;
}

/**
 * Runs `body` on the operands, pasted as they are when short; otherwise every operand that reads
 * a column becomes a lambda parameter (an 18.16 lambda body must not read outer columns itself).
 */
function bindOperands<R>(operands: SqlValue[], body: (vs: SqlValue[]) => R, wrap: (b: Binding, r: R) => R): R {
  if (operands.reduce((sum, v) => sum + textLength(v), 0) <= INLINE_LIMIT) return body(operands);
  const b: Binding = { params: [], args: [] };
  return wrap(b, body(operands.map((v) => bindParameter(v, b))));
}

/** A UInt8 (or other scalar) computed from the operands. */
function scalarOf(operands: SqlValue[], body: (vs: SqlValue[]) => string): string {
  return bindOperands(operands, body, lambda);
}

/** A value computed from the operands. */
function valueOf(operands: SqlValue[], body: (vs: SqlValue[]) => SqlValue): SqlValue {
  return bindOperands(operands, body, (b, r) => (r.cond !== undefined ? bool(lambda(b, r.cond)) : tupleValue(lambda(b, tupleText(r)), r.elems !== undefined)));
}

function truthyOf(v: SqlValue): string {
  return v.cond ?? scalarOf([v], ([x]) => truthySql(x!));
}

/**
 * A list of computed items. Short ones keep their items (`in` compares item by item); long ones
 * are computed in a lambda and carry their elements as arrays, as an array property does.
 */
function listValue(items: SqlValue[]): SqlValue {
  const json = (form: 's' | 'c') =>
    `concat('[', ${items.length === 0 ? "''" : `arrayStringConcat([${items.map((i) => jsonText(i, form)).join(', ')}], ',')`}, ']')`;
  return { ...typed(T_ARRAY, 'toFloat64(0)', json('s'), json('c')), items };
}

function listOf(items: SqlValue[]): SqlValue {
  return bindOperands(items, listValue, (b, list) => {
    const column = (part: (v: SqlValue) => string) => `[${list.items!.map(part).join(', ')}]`;
    const elems = { types: column((v) => v.t), nums: column((v) => v.n), strs: column((v) => v.s), canon: column((v) => v.c) };
    return tupleValue(lambda(b, tupleText({ ...list, elems })), true);
  });
}

function compile(expr: Expr, cols: ExpressionColumns): SqlValue {
  if (!hasProperty(expr)) return literal(evaluate(expr, {}));
  switch (expr.kind) {
    case 'literal':
      return literal(expr.value);
    case 'property':
      return property(expr.name, cols);
    case 'list':
      return listOf(expr.items.map((item) => compile(item, cols)));
    case 'not':
      return bool(`NOT (${truthyOf(compile(expr.operand, cols))})`);
    case 'negate':
      return valueOf([compile(expr.operand, cols)], ([v]) =>
        choose(`${v!.t} = ${T_NUMBER}`, typed(T_NUMBER, `-(${v!.n})`, numberText(`-(${v!.n})`)), UNDEF),
      );
    case 'call':
      return valueOf([compile(expr.arg, cols)], ([v]) => call(expr.fn, v!));
    case 'binary': {
      const op = expr.op;
      // One n-ary AND/OR for a chain: 18.16 took twice as long to analyse 120 nested ones.
      if (op === 'and' || op === 'or') return bool(chainOf(expr, op).map((e) => `(${truthyOf(compile(e, cols))})`).join(` ${op.toUpperCase()} `));
      const a = compile(expr.left, cols);
      const b = compile(expr.right, cols);
      return valueOf([a, b], ([x, y]) => binary(op, x!, y!));
    }
  }
}

/** The operands of a chain of one logical operator, in order. */
function chainOf(expr: Expr, op: 'and' | 'or'): Expr[] {
  const out: Expr[] = [];
  const pending = [expr];
  while (pending.length > 0) {
    const e = pending.pop()!;
    if (e.kind === 'binary' && e.op === op) pending.push(e.right, e.left);
    else out.push(e);
  }
  return out;
}

function binary(op: Exclude<Extract<Expr, { kind: 'binary' }>['op'], 'and' | 'or'>, a: SqlValue, b: SqlValue): SqlValue {
  switch (op) {
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
      return bool(ordered(op, a, b));
    default:
      return arithmetic(op, a, b);
  }
}

/** A UInt8 condition: the expression is truthy for the row. */
export function whereSql(expr: Expr, cols: ExpressionColumns): string {
  paramSeq = 0;
  return truthyOf(compile(expr, cols));
}

/** where-evaluate's segment label of one value (segmentation.ts labelOf). */
function labelParts(t: string, s: string): string {
  return `multiIf(${t} = ${T_UNDEFINED}, 'undefined', ${t} = ${T_NULL}, 'null', ${s})`;
}

function labelsOf(v: SqlValue): string {
  const single = `[${labelParts(v.t, v.s)}]`;
  let listLabels: string;
  if (v.items) listLabels = v.items.length === 0 ? 'emptyArrayString()' : `[${v.items.map((i) => labelParts(i.t, i.s)).join(', ')}]`;
  else if (v.elems) listLabels = `arrayMap((et, es) -> ${labelParts('et', 'es')}, ${v.elems.types}, ${v.elems.strs})`;
  else return single;
  const distinct = `arrayDistinct(${listLabels})`;
  return `if(${v.t} = ${T_ARRAY}, if(empty(${distinct}), ['undefined'], ${distinct}), ${single})`;
}

/**
 * An Array(String) of the segment labels the row counts under (segmentation.ts segmentLabels):
 * one label, or each distinct element label of a list (`['undefined']` for an empty one).
 */
export function segmentLabelsSql(expr: Expr, cols: ExpressionColumns): string {
  paramSeq = 0;
  return scalarOf([compile(expr, cols)], ([v]) => labelsOf(v!));
}
