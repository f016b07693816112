/**
 * Parsing one profile update as Mixpanel clients send it to /engage (user profiles) or /groups
 * (group profiles). Pure: any input yields a normalised update or a rejection message, never an
 * exception. Operator semantics (what an update does to a stored profile) live in profile-ops.ts.
 */
import { isUnstorableString, normalizeTime } from './event-record.js';
import { MAX_LIST_ITEMS, type ProfileOp } from './profile-ops.js';

export type ProfileKind = 'user' | 'group';

/** Identifies a user profile (distinctId) or a group profile (groupKey + groupId). */
export type ProfileKey = { kind: 'user'; distinctId: string } | { kind: 'group'; groupKey: string; groupId: string };

export interface ParsedProfileUpdate {
  key: ProfileKey;
  /** Epoch ms that orders `$set`/`$unset` (latest wins): `$time`, or now when absent. */
  time: number;
  /** `$ignore_time`: do not move `$last_seen`. */
  ignoreTime: boolean;
  /** The `$token` sent in the update, if any (checked by the HTTP layer, not here). */
  token?: string;
  /** The operations in the order they appear in the update. */
  ops: ProfileOp[];
}

export type ParseOutcome = { ok: true; update: ParsedProfileUpdate } | { ok: false; message: string };

export const USER_OPERATIONS = ['$set', '$set_once', '$add', '$append', '$union', '$remove', '$unset', '$delete'] as const;
export const GROUP_OPERATIONS = ['$set', '$set_once', '$union', '$remove', '$unset', '$delete'] as const;

/** Column width of distinct_id, group_key and group_id. */
export const MAX_ID_LENGTH = 255;
const MAX_PROPERTY_NAME = 255;
/** Nesting allowed inside a property value (deeper is refused rather than walked). */
export const MAX_VALUE_DEPTH = 16;
const MAX_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59);
const UNSTORABLE = 'strings must not contain NUL characters or unpaired UTF-16 surrogates';

/**
 * Why a value cannot be stored, or undefined: NUL and unpaired surrogates (Postgres refuses
 * them, SQLite would mangle them) in any key or string, nesting deeper than MAX_VALUE_DEPTH, or a
 * list longer than MAX_LIST_ITEMS (list operators cost time in the list's length).
 */
function valueProblem(value: unknown, depth = 0): string | undefined {
  if (typeof value === 'string') return isUnstorableString(value) ? UNSTORABLE : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth >= MAX_VALUE_DEPTH) return `values must not be nested more than ${MAX_VALUE_DEPTH} levels deep`;
  if (Array.isArray(value)) {
    if (value.length > MAX_LIST_ITEMS) return `lists must have at most ${MAX_LIST_ITEMS} items, got ${value.length}`;
    for (const v of value) {
      const p = valueProblem(v, depth + 1);
      if (p) return p;
    }
    return undefined;
  }
  for (const [k, v] of Object.entries(value)) {
    if (isUnstorableString(k)) return UNSTORABLE;
    const p = valueProblem(v, depth + 1);
    if (p) return p;
  }
  return undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A profile identifier: a non-empty string, or a finite number (SDKs pass numeric ids through). */
function idOf(value: unknown, field: string): string | { error: string } {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return { error: `'${field}' is required and must be a string` };
  if (value.length === 0) return { error: `'${field}' must not be empty` };
  if (value.length > MAX_ID_LENGTH) return { error: `'${field}' must be at most ${MAX_ID_LENGTH} characters` };
  if (isUnstorableString(value)) return { error: `'${field}': ${UNSTORABLE}` };
  return value;
}

/** `$time`: seconds or milliseconds (below 1e11 is seconds), a numeric string, or an ISO 8601 date. */
export function parseUpdateTime(value: unknown): number | undefined {
  const numeric = normalizeTime(value);
  if (numeric !== undefined) return numeric <= MAX_TIME_MS ? numeric : undefined;
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)) {
    const ms = Date.parse(value);
    return Number.isFinite(ms) && ms >= 0 && ms <= MAX_TIME_MS ? ms : undefined;
  }
  return undefined;
}

function checkNames(names: Iterable<string>, op: string): string | undefined {
  for (const name of names) {
    if (name.length === 0) return `${op}: property names must not be empty`;
    if (name.length > MAX_PROPERTY_NAME) return `${op}: property name '${name.slice(0, 40)}…' is longer than ${MAX_PROPERTY_NAME} characters`;
    // JSON.parse makes "__proto__" an own key; as a property name it is a prototype-pollution hazard.
    if (name === '__proto__') return `${op}: '__proto__' is not allowed as a property name`;
    if (isUnstorableString(name)) return `${op}: property names: ${UNSTORABLE}`;
  }
  return undefined;
}

/** Validates the value of one operation; returns the op or an error message. */
function parseOp(op: string, value: unknown): ProfileOp | string {
  switch (op) {
    case '$set':
    case '$set_once':
    case '$append':
    case '$remove': {
      if (!isPlainObject(value)) return `'${op}' must be a JSON object of property names to values`;
      const bad = checkNames(Object.keys(value), op);
      if (bad) return bad;
      const values: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) if (v !== undefined) values[k] = v;
      return { op, values };
    }
    case '$add': {
      if (!isPlainObject(value)) return `'$add' must be a JSON object of property names to numbers`;
      const bad = checkNames(Object.keys(value), op);
      if (bad) return bad;
      const values: Record<string, number> = {};
      for (const [k, v] of Object.entries(value)) {
        if (typeof v !== 'number' || !Number.isFinite(v)) return `'$add' value of '${k}' must be a number, got ${JSON.stringify(v) ?? 'undefined'}`;
        values[k] = v;
      }
      return { op, values };
    }
    case '$union': {
      if (!isPlainObject(value)) return `'$union' must be a JSON object of property names to lists`;
      const bad = checkNames(Object.keys(value), op);
      if (bad) return bad;
      const values: Record<string, unknown[]> = {};
      for (const [k, v] of Object.entries(value)) {
        if (!Array.isArray(v)) return `'$union' value of '${k}' must be a list, e.g. ["a","b"]`;
        values[k] = v;
      }
      return { op, values };
    }
    case '$unset': {
      if (!Array.isArray(value) || !value.every((n) => typeof n === 'string')) {
        return `'$unset' must be a list of property names, e.g. ["plan"]`;
      }
      const bad = checkNames(value as string[], op);
      if (bad) return bad;
      return { op, names: value as string[] };
    }
    case '$delete':
      return { op: '$delete' };
    default:
      return `unknown operation '${op}'`;
  }
}

/**
 * Parses one update. Keys other than the identifiers, the modifiers and the operations (for
 * example `$ip`, `$ignore_alias`, `$device_id` sent by some SDKs) are accepted and ignored.
 */
export function parseProfileUpdate(raw: unknown, kind: ProfileKind, now: number): ParseOutcome {
  const fail = (message: string): ParseOutcome => ({ ok: false, message });
  if (!isPlainObject(raw)) return fail('update must be a JSON object');

  let key: ProfileKey;
  if (kind === 'user') {
    const id = idOf(raw.$distinct_id, '$distinct_id');
    if (typeof id !== 'string') return fail(id.error);
    key = { kind, distinctId: id };
  } else {
    const groupKey = idOf(raw.$group_key, '$group_key');
    if (typeof groupKey !== 'string') return fail(groupKey.error);
    const groupId = idOf(raw.$group_id, '$group_id');
    if (typeof groupId !== 'string') return fail(groupId.error);
    key = { kind, groupKey, groupId };
  }

  let time = now;
  if (raw.$time !== undefined && raw.$time !== null) {
    const t = parseUpdateTime(raw.$time);
    if (t === undefined) return fail("'$time' must be a Unix time in seconds or milliseconds (or an ISO 8601 date)");
    time = t;
  }

  const allowed: readonly string[] = kind === 'user' ? USER_OPERATIONS : GROUP_OPERATIONS;
  const ops: ProfileOp[] = [];
  for (const [name, value] of Object.entries(raw)) {
    if (!(USER_OPERATIONS as readonly string[]).includes(name)) continue;
    if (!allowed.includes(name)) return fail(`'${name}' is not supported on group profiles (use one of ${GROUP_OPERATIONS.join(', ')})`);
    const op = parseOp(name, value);
    if (typeof op === 'string') return fail(op);
    const problem = op.op === '$delete' ? undefined : valueProblem(value);
    if (problem) return fail(`'${name}': ${problem}`);
    ops.push(op);
  }
  if (ops.length === 0) return fail(`update has no operation: use one of ${allowed.join(', ')}`);
  if (ops.some((o) => o.op === '$delete') && ops.length > 1) return fail("'$delete' cannot be combined with other operations");

  const token = typeof raw.$token === 'string' ? raw.$token : undefined;
  const ignoreTime = raw.$ignore_time === true || raw.$ignore_time === 'true' || raw.$ignore_time === 1;
  return { ok: true, update: { key, time, ignoreTime, ops, ...(token !== undefined ? { token } : {}) } };
}
