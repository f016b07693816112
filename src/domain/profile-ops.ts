/**
 * What a profile update does to a stored profile: Mixpanel's operators, applied in memory. Pure.
 *
 * Ordering: `$set` and `$unset` are latest-wins writes. Each stores the update's time per
 * property in `propertyTimes`, and a write older than the stored time is skipped, so replays and
 * out-of-order delivery converge on the newest value. (`$unset` leaves its time behind as a
 * tombstone, so an older `$set` replayed after it does not resurrect the property.) The other
 * operators are applied in arrival order: `$set_once` fills only an absent property, `$add`,
 * `$append`, `$union`, `$remove` transform the current value.
 *
 * Cost: a list property holds at most MAX_LIST_ITEMS items (an update that would grow one beyond
 * is rejected), and the content keys of a list's items are computed once per list and carried
 * to the lists derived from it, so a batch of updates on one list costs time linear in the data,
 * not in (updates × list length) canonical serialisations.
 *
 * An operator that cannot apply to the current value (`$add` to a string, `$append`/`$union`/
 * `$remove` on a non-list) rejects the whole update with a message; the caller keeps the state
 * from before the update, so an update is never half-applied.
 */
import { canonicalJson } from './canonical-json.js';

export type ProfileOp =
  | { op: '$set' | '$set_once' | '$append' | '$remove'; values: Record<string, unknown> }
  | { op: '$add'; values: Record<string, number> }
  | { op: '$union'; values: Record<string, unknown[]> }
  | { op: '$unset'; names: string[] }
  | { op: '$delete' };

/** A stored profile: its properties and, per property, the time of the last `$set`/`$unset`. */
export interface ProfileState {
  properties: Record<string, unknown>;
  propertyTimes: Record<string, number>;
}

export interface ApplyOptions {
  /** Epoch ms of the update (`$time`, else now). */
  time: number;
  /** `$ignore_time`: leave `$last_seen` alone. */
  ignoreTime?: boolean;
  /** Maintain `$last_seen` (user profiles do, as Mixpanel's do; group profiles do not). */
  lastSeen?: boolean;
}

/** `null` state: no profile (never created, or deleted). */
export type ApplyOutcome = { ok: true; state: ProfileState | null } | { ok: false; message: string };

export const LAST_SEEN = '$last_seen';

/** Mixpanel's profile date format: ISO 8601 in UTC without zone or fraction. */
export function formatProfileTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function has(obj: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** Latest-wins: may a write at `time` replace what the property holds? (Equal times: yes.) */
function newerOrEqual(times: Record<string, number>, key: string, time: number): boolean {
  return !has(times, key) || times[key]! <= time;
}

/** Most items a list property may hold ($set, $append, $union); documented in docs/security.md. */
export const MAX_LIST_ITEMS = 1000;

/**
 * Content keys (canonical JSON) of each list's items, by list identity. Lists are never mutated
 * here (every operator makes a new one), so a list's keys stay valid for as long as it lives.
 */
const listKeys = new WeakMap<readonly unknown[], string[]>();

function keysOf(list: readonly unknown[]): string[] {
  let keys = listKeys.get(list);
  if (!keys) {
    keys = list.map((v) => canonicalJson(v));
    listKeys.set(list, keys);
  }
  return keys;
}

function withKeys(list: unknown[], keys: string[]): unknown[] {
  listKeys.set(list, keys);
  return list;
}

/** Distinct values by content (objects compare by canonical JSON, so key order does not matter). */
function unionInto(current: readonly unknown[], added: readonly unknown[]): unknown[] {
  const keys = [...keysOf(current)];
  const seen = new Set(keys);
  const out = [...current];
  for (const v of added) {
    const k = canonicalJson(v);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(v);
    keys.push(k);
  }
  return withKeys(out, keys);
}

function appendTo(current: readonly unknown[], v: unknown): unknown[] {
  return withKeys([...current, v], [...keysOf(current), canonicalJson(v)]);
}

function removeFrom(current: readonly unknown[], v: unknown): unknown[] {
  const drop = canonicalJson(v);
  const keys = keysOf(current);
  const out: unknown[] = [];
  const kept: string[] = [];
  for (let i = 0; i < current.length; i++) {
    if (keys[i] === drop) continue;
    out.push(current[i]);
    kept.push(keys[i]!);
  }
  return withKeys(out, kept);
}

function tooLong(op: string, k: string): string {
  return `${op} on '${k}' would make it longer than ${MAX_LIST_ITEMS} items`;
}

/** Applies all operations of one update; the input state is not modified. */
export function applyProfileOps(state: ProfileState | null, ops: readonly ProfileOp[], options: ApplyOptions): ApplyOutcome {
  const { time } = options;
  const props: Record<string, unknown> = { ...(state?.properties ?? {}) };
  const times: Record<string, number> = { ...(state?.propertyTimes ?? {}) };
  const reject = (message: string): ApplyOutcome => ({ ok: false, message });

  for (const op of ops) {
    switch (op.op) {
      case '$delete':
        return { ok: true, state: null };
      case '$set':
        for (const [k, v] of Object.entries(op.values)) {
          if (!newerOrEqual(times, k, time)) continue;
          props[k] = v;
          times[k] = time;
        }
        break;
      case '$set_once':
        for (const [k, v] of Object.entries(op.values)) if (!has(props, k)) props[k] = v;
        break;
      case '$unset':
        for (const k of op.names) {
          if (!newerOrEqual(times, k, time)) continue;
          delete props[k];
          times[k] = time;
        }
        break;
      case '$add':
        for (const [k, by] of Object.entries(op.values)) {
          const cur = has(props, k) ? props[k] : 0;
          if (typeof cur !== 'number') return reject(`cannot $add to '${k}': its current value is ${describe(cur)}, not a number`);
          const sum = cur + by;
          if (!Number.isFinite(sum)) return reject(`$add to '${k}' overflows`);
          props[k] = sum;
        }
        break;
      case '$append':
        for (const [k, v] of Object.entries(op.values)) {
          const cur = has(props, k) ? props[k] : [];
          if (!Array.isArray(cur)) return reject(`cannot $append to '${k}': its current value is ${describe(cur)}, not a list`);
          if (cur.length >= MAX_LIST_ITEMS) return reject(tooLong('$append', k));
          props[k] = appendTo(cur, v);
        }
        break;
      case '$union':
        for (const [k, vs] of Object.entries(op.values)) {
          const cur = has(props, k) ? props[k] : [];
          if (!Array.isArray(cur)) return reject(`cannot $union into '${k}': its current value is ${describe(cur)}, not a list`);
          const merged = unionInto(cur, vs);
          if (merged.length > MAX_LIST_ITEMS) return reject(tooLong('$union', k));
          props[k] = merged;
        }
        break;
      case '$remove':
        for (const [k, v] of Object.entries(op.values)) {
          if (!has(props, k)) continue; // removing from a list that does not exist changes nothing
          const cur = props[k];
          if (!Array.isArray(cur)) return reject(`cannot $remove from '${k}': its current value is ${describe(cur)}, not a list`);
          props[k] = removeFrom(cur, v);
        }
        break;
    }
  }

  // An update that leaves a profile that never existed without properties does not create one.
  if (state === null && Object.keys(props).length === 0) return { ok: true, state: null };

  if (options.lastSeen && !options.ignoreTime && newerOrEqual(times, LAST_SEEN, time)) {
    props[LAST_SEEN] = formatProfileTime(time);
    times[LAST_SEEN] = time;
  }
  return { ok: true, state: { properties: props, propertyTimes: times } };
}
