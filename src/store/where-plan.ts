/**
 * Turns a `where` / `on` expression (domain/where-expression.ts) into a small plan every store
 * renders in its own SQL dialect, with exactly the semantics of domain/where-evaluate.ts. Pure.
 *
 * What is pushed down (everything else returns undefined, and the caller evaluates in Node —
 * see docs/read-back.md "The event store"):
 * - `and`, `or`, `not`, `boolean(x)`, a bare property (its truthiness), `defined(p)`;
 * - `p == c`, `p != c` with c a scalar constant; `p > c` (and >=, <, <=) with c a number or string;
 * - `p in [c1, c2, …]` (scalar constants), `c in p` (p an array holding c, or a string containing c);
 * - any sub-expression without a property, folded to its constant by the evaluator itself.
 * `p` is `properties["name"]`; the names `time` (seconds), `distinct_id` and `$insert_id` are
 * the event's columns, as in the export record. `on` is pushed down when it is a bare property
 * other than `time`.
 */
import { evaluate, truthy } from '../domain/where-evaluate.js';
import { hasProperty, type Expr } from '../domain/where-expression.js';

export type Scalar = string | number | boolean | null;

/** Where a property's value comes from. */
export type PropRef = { kind: 'json'; name: string } | { kind: 'column'; column: 'time' | 'distinct_id' | 'insert_id' };

export type Cond =
  | { k: 'const'; value: boolean }
  | { k: 'and' | 'or'; left: Cond; right: Cond }
  | { k: 'not'; item: Cond }
  | { k: 'eq'; prop: PropRef; value: Scalar }
  | { k: 'cmp'; prop: PropRef; op: '>' | '>=' | '<' | '<='; value: string | number }
  | { k: 'contains'; prop: PropRef; value: Scalar }
  | { k: 'defined'; prop: PropRef }
  | { k: 'truthy'; prop: PropRef };

const COLUMNS: Record<string, PropRef> = {
  time: { kind: 'column', column: 'time' },
  distinct_id: { kind: 'column', column: 'distinct_id' },
  $insert_id: { kind: 'column', column: 'insert_id' },
};

/** Whether `properties["name"]` names one of the event's own columns (time, distinct_id, $insert_id), not a stored property. */
export function isEventColumn(name: string): boolean {
  return Object.prototype.hasOwnProperty.call(COLUMNS, name);
}

function propRef(name: string): PropRef | undefined {
  if (isEventColumn(name)) return COLUMNS[name];
  // JSON paths quote the name; a quote or backslash inside it is left to the evaluator.
  if (name === '' || [...name].some((c) => c === '"' || c === '\\' || c.charCodeAt(0) < 0x20)) return undefined;
  return { kind: 'json', name };
}

const constant = (e: Expr): unknown => evaluate(e, {});

function isScalar(v: unknown): v is Scalar {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

const FLIP = { '>': '<', '>=': '<=', '<': '>', '<=': '>=' } as const;

function equality(prop: Expr, other: Expr): Cond | undefined {
  if (prop.kind !== 'property' || hasProperty(other)) return undefined;
  const ref = propRef(prop.name);
  const v = constant(other);
  if (!ref) return undefined;
  if (v === undefined) return { k: 'const', value: false }; // undefined equals nothing
  return isScalar(v) ? { k: 'eq', prop: ref, value: v } : undefined;
}

function comparison(op: '>' | '>=' | '<' | '<=', prop: Expr, other: Expr): Cond | undefined {
  if (prop.kind !== 'property' || hasProperty(other)) return undefined;
  const ref = propRef(prop.name);
  const v = constant(other);
  if (!ref) return undefined;
  if (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) return { k: 'cmp', prop: ref, op, value: v };
  return { k: 'const', value: false }; // only number-number and string-string compare
}

function membership(left: Expr, right: Expr): Cond | undefined {
  if (left.kind === 'property' && !hasProperty(right)) {
    const ref = propRef(left.name);
    const list = constant(right);
    if (!ref || !Array.isArray(list) || !list.every((v) => v === undefined || isScalar(v))) return undefined;
    let out: Cond = { k: 'const', value: false };
    for (const v of list) if (v !== undefined) out = { k: 'or', left: out, right: { k: 'eq', prop: ref, value: v } };
    return out;
  }
  if (right.kind === 'property' && !hasProperty(left)) {
    const ref = propRef(right.name);
    const v = constant(left);
    if (!ref) return undefined;
    if (v === undefined) return { k: 'const', value: false };
    return isScalar(v) ? { k: 'contains', prop: ref, value: v } : undefined;
  }
  return undefined;
}

/** The plan of a boolean (truthiness) context, or undefined when it cannot be pushed down. */
export function planWhere(e: Expr): Cond | undefined {
  if (!hasProperty(e)) return { k: 'const', value: truthy(constant(e)) };
  switch (e.kind) {
    case 'property': {
      const ref = propRef(e.name);
      return ref && { k: 'truthy', prop: ref };
    }
    case 'list':
      return { k: 'const', value: e.items.length > 0 };
    case 'not': {
      const item = planWhere(e.operand);
      return item && { k: 'not', item };
    }
    case 'call':
      if (e.fn === 'boolean') return planWhere(e.arg);
      if (e.fn === 'defined' && e.arg.kind === 'property') {
        const ref = propRef(e.arg.name);
        return ref && { k: 'defined', prop: ref };
      }
      return undefined;
    case 'binary': {
      const { op, left, right } = e;
      if (op === 'and' || op === 'or') {
        const l = planWhere(left);
        const r = planWhere(right);
        return l && r && { k: op, left: l, right: r };
      }
      if (op === '==' || op === '!=') {
        const eq = equality(left, right) ?? equality(right, left);
        return eq && (op === '==' ? eq : { k: 'not', item: eq });
      }
      if (op === '>' || op === '>=' || op === '<' || op === '<=') return comparison(op, left, right) ?? comparison(FLIP[op], right, left);
      if (op === 'in') return membership(left, right);
      return undefined;
    }
    default:
      return undefined;
  }
}

/** The property an `on` expression segments by, when the store can compute its labels. */
export function planSegment(e: Expr): { kind: 'json'; name: string } | { kind: 'column'; column: 'distinct_id' | 'insert_id' } | undefined {
  if (e.kind !== 'property') return undefined;
  const ref = propRef(e.name);
  if (!ref || (ref.kind === 'column' && ref.column === 'time')) return undefined;
  return ref as { kind: 'json'; name: string } | { kind: 'column'; column: 'distinct_id' | 'insert_id' };
}

/** Whether a store can take this `where` (and `on`) in its query. */
export function canPushDown(where?: Expr, on?: Expr): boolean {
  return (where === undefined || planWhere(where) !== undefined) && (on === undefined || planSegment(on) !== undefined);
}

/** Every property name the expression reads (for deciding whether lookup enrichment matters). */
export function propertyNames(e: Expr, out: Set<string> = new Set()): Set<string> {
  switch (e.kind) {
    case 'property':
      out.add(e.name);
      break;
    case 'list':
      e.items.forEach((i) => propertyNames(i, out));
      break;
    case 'not':
    case 'negate':
      propertyNames(e.operand, out);
      break;
    case 'call':
      propertyNames(e.arg, out);
      break;
    case 'binary':
      propertyNames(e.left, out);
      propertyNames(e.right, out);
      break;
  }
  return out;
}
