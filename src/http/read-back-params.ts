/**
 * Query parameters of the read-back APIs, validated into typed values; every mistake is a 400
 * naming the parameter (never a 500, never silently ignored).
 */
import { compileValue, compileWhere, type Predicate, type Value } from '../domain/where-evaluate.js';
import { ExpressionSyntaxError } from '../domain/where-expression.js';
import { parseDay, UNITS, type DayRange, type Unit } from '../domain/time-buckets.js';
import { ValidationError } from '../lib/errors.js';

export type Params = Record<string, unknown>;

const bad = (message: string) => new ValidationError(400, message);

/** One string value of a parameter; absent and empty are undefined; repeated is a 400. */
export function single(params: Params, name: string): string | undefined {
  const v = params[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw bad(`'${name}' must be given once, as a single value`);
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
  if (parsed.length > MAX_NAMES) throw bad(`'${name}' may list at most ${MAX_NAMES} values`);
  return [...new Set(parsed as string[])];
}

function expressionError(name: string, err: unknown): never {
  if (err instanceof ExpressionSyntaxError) {
    throw new ValidationError(400, `invalid '${name}' expression: ${err.message}`, { position: err.position });
  }
  throw err;
}

export function whereParam(params: Params, name = 'where'): Predicate | undefined {
  const v = single(params, name);
  if (v === undefined) return undefined;
  try {
    return compileWhere(v);
  } catch (err) {
    expressionError(name, err);
  }
}

/** `on`: an expression, or just a property name (`$source` means `properties["$source"]`). */
export function onParam(params: Params): ((props: Readonly<Record<string, unknown>>) => Value) | undefined {
  const v = single(params, 'on');
  if (v === undefined) return undefined;
  const looksLikeExpression = /^\s*properties\s*\[/.test(v) || /[()"'[\]=<>]/.test(v) || /\s(and|or|in)\s/.test(v);
  try {
    return compileValue(looksLikeExpression ? v : `properties[${JSON.stringify(v)}]`);
  } catch (err) {
    expressionError('on', err);
  }
}

export function unitParam(params: Params): Unit {
  const v = single(params, 'unit') ?? 'day';
  if (!(UNITS as readonly string[]).includes(v)) throw bad(`'unit' must be one of ${UNITS.join(', ')}`);
  return v as Unit;
}

/** Mixpanel's `type`: only `general` (total counts) is computed here. */
export function typeParam(params: Params, supported: readonly string[] = ['general']): string {
  const v = single(params, 'type') ?? 'general';
  if (!['general', 'unique', 'average'].includes(v)) throw bad("'type' must be general, unique or average");
  if (!supported.includes(v)) throw bad(`'type=${v}' is not supported here; use ${supported.join(' or ')}`);
  return v;
}
