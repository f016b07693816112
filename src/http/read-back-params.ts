/**
 * Query parameters of the read-back APIs, validated into typed values; every mistake is a 400
 * naming the parameter (never a 500, never silently ignored).
 */
import { evaluate, truthy, type Predicate } from '../domain/where-evaluate.js';
import { ExpressionSyntaxError, parseExpression, type Expr } from '../domain/where-expression.js';
import { parseDay, UNITS, type DayRange, type Unit } from '../domain/time-buckets.js';
import { ValidationError } from '../lib/errors.js';

export type Params = Record<string, unknown>;

const bad = (message: string) => new ValidationError(400, message);

/** One string value of a parameter; absent and empty are undefined; repeated is a 400. */
export function single(params: Params, name: string): string | undefined {
  const v = params[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw bad(`'${name}' must be given once, as a single value`);
  // No stored name, id or value holds a NUL, and PostgreSQL refuses one as a parameter (a 500).
  if (v.includes('\u0000')) throw bad(`'${name}' must not contain a NUL character`);
  return v;
}

export function required(params: Params, name: string): string {
  const v = single(params, name);
  if (v === undefined) throw bad(`'${name}' is required`);
  return v;
}

/** `from_date`/`to_date` as inclusive UTC days. */
export function dateRange(params: Params): DayRange & { fromDate: string; toDate: string } {
  const fromDate = required(params, 'from_date');
  const toDate = required(params, 'to_date');
  const fromMs = parseDay(fromDate);
  if (fromMs === undefined) throw bad(`'from_date' must be a date in YYYY-MM-DD form, got ${JSON.stringify(fromDate.slice(0, 40))}`);
  const toStart = parseDay(toDate);
  if (toStart === undefined) throw bad(`'to_date' must be a date in YYYY-MM-DD form, got ${JSON.stringify(toDate.slice(0, 40))}`);
  if (fromMs > toStart) throw bad(`'from_date' (${fromDate}) is after 'to_date' (${toDate})`);
  return { fromMs, toMs: toStart + 86_400_000, fromDate, toDate };
}

export interface IntOptions {
  min: number;
  max: number;
  default?: number;
}

export function integer(params: Params, name: string, o: IntOptions): number | undefined {
  const v = single(params, name);
  if (v === undefined) return o.default;
  if (!/^-?\d{1,16}$/.test(v.trim())) throw bad(`'${name}' must be an integer`);
  const n = Number(v);
  if (n < o.min || n > o.max) throw bad(`'${name}' must be between ${o.min} and ${o.max}`);
  return n;
}

const MAX_NAMES = 1000;

/** A JSON array of non-empty strings (e.g. `event=["a","b"]`, `distinct_ids=[…]`). */
export function stringArray(params: Params, name: string, o: { allowBareName?: boolean } = {}): string[] | undefined {
  const v = single(params, name);
  if (v === undefined) return undefined;
  const trimmed = v.trim();
  if (o.allowBareName && !trimmed.startsWith('[') && !trimmed.startsWith('"')) return [v];
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    throw bad(`'${name}' must be a JSON array of strings, e.g. ["a","b"]`);
  }
  if (typeof parsed === 'string') parsed = [parsed];
  if (!Array.isArray(parsed) || !parsed.every((s) => typeof s === 'string' && s !== '')) {
    throw bad(`'${name}' must be a JSON array of non-empty strings`);
  }
  if ((parsed as string[]).some((s) => s.includes('\u0000'))) throw bad(`'${name}' must not contain a NUL character`);
  if (parsed.length > MAX_NAMES) throw bad(`'${name}' may list at most ${MAX_NAMES} values`);
  return [...new Set(parsed as string[])];
}

function expressionError(name: string, err: unknown): never {
  if (err instanceof ExpressionSyntaxError) {
    throw new ValidationError(400, `invalid '${name}' expression: ${err.message}`, { position: err.position });
  }
  throw err;
}

/** A `where` expression, parsed (the event store compiles it to SQL where it can). */
export function whereExpression(params: Params, name = 'where'): Expr | undefined {
  const v = single(params, name);
  if (v === undefined) return undefined;
  try {
    return parseExpression(v);
  } catch (err) {
    expressionError(name, err);
  }
}

/** A `where` expression as a predicate over properties (profiles are filtered in Node). */
export function whereParam(params: Params, name = 'where'): Predicate | undefined {
  const expr = whereExpression(params, name);
  return expr && ((props) => truthy(evaluate(expr, props)));
}

/** `on`: an expression, or just a property name (`$source` means `properties["$source"]`). */
export function onExpression(params: Params): Expr | undefined {
  const v = single(params, 'on');
  if (v === undefined) return undefined;
  const looksLikeExpression = /^\s*properties\s*\[/.test(v) || /[()"'[\]=<>]/.test(v) || /\s(and|or|in)\s/.test(v);
  try {
    return parseExpression(looksLikeExpression ? v : `properties[${JSON.stringify(v)}]`);
  } catch (err) {
    expressionError('on', err);
  }
}

export function unitParam(params: Params): Unit {
  const v = single(params, 'unit') ?? 'day';
  if (!(UNITS as readonly string[]).includes(v)) throw bad(`'unit' must be one of ${UNITS.join(', ')}`);
  return v as Unit;
}

export type ReportType = 'general' | 'unique' | 'average';
const REPORT_TYPES: readonly ReportType[] = ['general', 'unique', 'average'];

/** Mixpanel's `type`: general (events), unique (resolved users) or average (events per user). */
export function typeParam(params: Params, supported: readonly ReportType[] = REPORT_TYPES): ReportType {
  const v = single(params, 'type') ?? 'general';
  if (!(REPORT_TYPES as readonly string[]).includes(v)) throw bad("'type' must be general, unique or average");
  if (!supported.includes(v as ReportType)) throw bad(`'type=${v}' is not supported here; use ${supported.join(' or ')}`);
  return v as ReportType;
}
