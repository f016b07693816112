/**
 * Evaluates a parsed segmentation expression against one record's properties. Pure and total:
 * any AST over any properties yields a value, never an exception. Types are not coerced
 * implicitly (`5 == "5"` is false; use number()/string() to convert), a missing property is
 * `undefined`, and `!=` is exactly `not ==` — so `properties["x"] != "a"` holds where x is absent.
 *
 * Work per record is bounded: the parser caps the tree's size and depth; an object or list is
 * serialised for comparison once per value (not once per comparison that mentions it); and `+`
 * on strings yields undefined past MAX_STRING_RESULT characters, so no expression can build a
 * string larger than its inputs by more than that.
 */
import { canonicalJson } from './canonical-json.js';
import { parseExpression, type Expr } from './where-expression.js';

export type Value = unknown;

export function truthy(v: Value): boolean {
  if (v === undefined || v === null || v === false || v === '' || v === 0) return false;
  if (typeof v === 'number' && Number.isNaN(v)) return false;
  if (Array.isArray(v)) return v.length > 0;
  return true;
}

/** Longest string `+` builds (a record's strings are at most the event size anyway). */
export const MAX_STRING_RESULT = 64 * 1024;

/** Canonical JSON of objects and lists, once per value (values are never mutated here). */
const canonical = new WeakMap<object, string>();
/** JSON text of objects and lists for string(), once per value. */
const stringified = new WeakMap<object, string>();
function canonicalOf(v: object): string {
  let c = canonical.get(v);
  if (c === undefined) {
    c = canonicalJson(v);
    canonical.set(v, c);
  }
  return c;
}

function equal(a: Value, b: Value): boolean {
  if (a === undefined || b === undefined) return false;
  if (a === null || b === null) return a === b;
  if (typeof a !== 'object' && typeof b !== 'object') return a === b;
  if (a === b) return true;
  return typeof a === typeof b && canonicalOf(a as object) === canonicalOf(b as object);
}

function ordered(a: Value, b: Value): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return undefined;
}

function toNumber(v: Value): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

function toStringValue(v: Value): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v !== 'object') return JSON.stringify(v);
  let text = stringified.get(v);
  if (text === undefined) {
    text = JSON.stringify(v);
    stringified.set(v, text);
  }
  return text;
}

function arithmetic(op: string, a: Value, b: Value): Value {
  if (op === '+' && typeof a === 'string' && typeof b === 'string') return a.length + b.length <= MAX_STRING_RESULT ? a + b : undefined;
  if (typeof a !== 'number' || typeof b !== 'number') return undefined;
  switch (op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    case '/':
      return b === 0 ? undefined : a / b;
    case '%':
      return b === 0 ? undefined : a % b;
  }
  return undefined;
}

function contains(needle: Value, haystack: Value): boolean {
  if (Array.isArray(haystack)) return haystack.some((item) => equal(needle, item));
  if (typeof haystack === 'string' && typeof needle === 'string') return haystack.includes(needle);
  return false;
}

export function evaluate(expr: Expr, props: Readonly<Record<string, unknown>>): Value {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'property':
      // Own keys only: properties["constructor"] must not reach Object.prototype.
      return Object.prototype.hasOwnProperty.call(props, expr.name) ? props[expr.name] : undefined;
    case 'list':
      return expr.items.map((item) => evaluate(item, props));
    case 'not':
      return !truthy(evaluate(expr.operand, props));
    case 'negate': {
      const v = evaluate(expr.operand, props);
      return typeof v === 'number' ? -v : undefined;
    }
    case 'call': {
      const v = evaluate(expr.arg, props);
      switch (expr.fn) {
        case 'defined':
          return v !== undefined && v !== null;
        case 'boolean':
          return truthy(v);
        case 'number':
          return toNumber(v);
        case 'string':
          return toStringValue(v);
        case 'floor':
        case 'round':
        case 'ceil':
          return typeof v === 'number' ? Math[expr.fn](v) : undefined;
      }
      return undefined;
    }
    case 'binary': {
      const { op } = expr;
      if (op === 'and') return truthy(evaluate(expr.left, props)) && truthy(evaluate(expr.right, props));
      if (op === 'or') return truthy(evaluate(expr.left, props)) || truthy(evaluate(expr.right, props));
      const a = evaluate(expr.left, props);
      const b = evaluate(expr.right, props);
      switch (op) {
        case '==':
          return equal(a, b);
        case '!=':
          return !equal(a, b);
        case 'in':
          return contains(a, b);
        case '>':
        case '>=':
        case '<':
        case '<=': {
          const c = ordered(a, b);
          if (c === undefined) return false;
          return op === '>' ? c > 0 : op === '>=' ? c >= 0 : op === '<' ? c < 0 : c <= 0;
        }
        default:
          return arithmetic(op, a, b);
      }
    }
  }
}

export type Predicate = (props: Readonly<Record<string, unknown>>) => boolean;

/** Parses a `where` expression into a predicate (throws ExpressionSyntaxError). */
export function compileWhere(src: string): Predicate {
  const expr = parseExpression(src);
  return (props) => truthy(evaluate(expr, props));
}

/** Parses an `on` expression into a value extractor (throws ExpressionSyntaxError). */
export function compileValue(src: string): (props: Readonly<Record<string, unknown>>) => Value {
  const expr = parseExpression(src);
  return (props) => evaluate(expr, props);
}
