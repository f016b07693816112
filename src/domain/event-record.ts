/**
 * Validation and normalisation of one event record as sent to /import, /track, a sync, a
 * migration or a batch import. Pure: any input yields either a normalised event or a rejection
 * value, never an exception.
 */
import { canonicalJson } from './canonical-json.js';
import { resolveEventIdentity, type IdMerge } from './identity.js';
import { deterministicInsertId, isValidInsertId } from './insert-id.js';

export interface EventLimits {
  maxEventBytes: number;
  /** Properties must number fewer than this. */
  maxProperties: number;
  maxDepth: number;
}

export interface EventRules extends EventLimits {
  /** Strict mode: reject times before 1971-01-01 and more than an hour in the future. */
  strictTime: boolean;
  /** Refuse events older than this many ms before `now` (/track: 5 days). */
  maxAgeMs?: number;
  now: number;
  /** The project's ID merge system (identity.ts); the default is the contract's, simplified. */
  idMerge?: IdMerge;
}

export const DEFAULT_EVENT_LIMITS: EventLimits = { maxEventBytes: 1024 * 1024, maxProperties: 255, maxDepth: 3 };

/** The stored form of an event: the dedupe key columns plus the remaining properties. */
export interface NormalizedEvent {
  event: string;
  distinctId: string;
  /** Epoch milliseconds. */
  time: number;
  insertId: string;
  /** Every property but time, distinct_id and $insert_id (those live in their own columns). */
  properties: Record<string, unknown>;
  /** The device an anonymous event was done on (simplified ID merge; identity.ts). */
  deviceId?: string;
  /** The device → user link the event carries (simplified ID merge). */
  link?: { deviceId: string; userId: string };
}

export interface RecordRejection {
  index: number;
  $insert_id?: string;
  field: string;
  message: string;
}

export type RecordOutcome = { ok: true; event: NormalizedEvent } | { ok: false; reject: RecordRejection };

const MIN_STRICT_TIME_MS = Date.UTC(1971, 0, 1);
const UNSTORABLE_MESSAGE = 'strings must not contain NUL characters or unpaired UTF-16 surrogates';
const FUTURE_SLACK_MS = 60 * 60 * 1000;
const MAX_DATE_MS = 8.64e15;

/** Mixpanel's rule: a time below 1e11 is seconds, anything else milliseconds. */
export function normalizeTime(value: unknown): number | undefined {
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(value)) n = Number(value);
  else return undefined;
  if (!Number.isFinite(n) || n < 0) return undefined;
  const ms = Math.round(n < 1e11 ? n * 1000 : n);
  // Beyond the range of a JS Date the value is no instant at all (and would overflow storage).
  return ms <= MAX_DATE_MS ? ms : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// NUL cannot be stored in a Postgres text or jsonb value, and an unpaired surrogate is not
// Unicode (SQLite would silently replace it, Postgres refuses it): such a record is rejected on
// both databases alike rather than failing a whole batch at write time.
// eslint-disable-next-line no-control-regex -- finding NUL is the point
const SUSPECT_CHARS = /[\u0000\ud800-\udfff]/;

/** A string the databases cannot store faithfully. */
export function isUnstorableString(s: string): boolean {
  return SUSPECT_CHARS.test(s) && (s.includes('\u0000') || !(s as string & { isWellFormed(): boolean }).isWellFormed());
}

const UNSTORABLE = -1;

/**
 * One pass over a property value: its nesting depth (a scalar is 0), or UNSTORABLE when a key or
 * string inside cannot be stored. Stops descending past `limit`. `size` accumulates a rough
 * serialised size so the exact one is computed only for events that could be near the limit.
 */
function inspect(value: unknown, limit: number, depth: number, size: { n: number }): number {
  if (typeof value === 'string') {
    size.n += value.length + 2;
    return isUnstorableString(value) ? UNSTORABLE : depth;
  }
  if (typeof value !== 'object' || value === null) {
    size.n += 8;
    return depth;
  }
  if (depth >= limit) return depth + 1;
  let max = depth + 1;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const d = inspect(value[i], limit, depth + 1, size);
      if (d === UNSTORABLE) return UNSTORABLE;
      if (d > max) max = d;
    }
    size.n += value.length + 2;
    return max;
  }
  for (const k in value) {
    size.n += k.length + 4;
    if (isUnstorableString(k)) return UNSTORABLE;
    const d = inspect((value as Record<string, unknown>)[k], limit, depth + 1, size);
    if (d === UNSTORABLE) return UNSTORABLE;
    if (d > max) max = d;
  }
  return max;
}

/** Sets a key as data even when it is `__proto__` (JSON.parse makes that an own property). */
function setData(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/**
 * A rejection of record `index`. A module-level function, not a closure made per record: under
 * tsx every closure created also gets its name defined (esbuild's keepNames), which cost about 6 %
 * of the /import worker's CPU when this was a closure.
 */
function rejection(index: number, field: string, message: string, insertId?: unknown): RecordOutcome {
  return { ok: false, reject: { index, ...(typeof insertId === 'string' ? { $insert_id: insertId } : {}), field, message } };
}

export function validateEventRecord(raw: unknown, index: number, rules: EventRules): RecordOutcome {
  if (!isPlainObject(raw)) return rejection(index, '', 'record must be a JSON object');
  const props = raw.properties;
  const sentInsertId = isPlainObject(props) ? props.$insert_id : undefined;
  if (typeof raw.event !== 'string' || raw.event.length === 0) {
    return rejection(index, 'event', "'event' must be a non-empty string", sentInsertId);
  }
  if (raw.event.length > 255) return rejection(index, 'event', "'event' must be at most 255 characters", sentInsertId);
  if (!isPlainObject(props)) return rejection(index, 'properties', "'properties' must be a JSON object", sentInsertId);

  const time = normalizeTime(props.time);
  if (props.time === undefined) return rejection(index, 'properties.time', "'properties.time' is required", sentInsertId);
  if (time === undefined) {
    return rejection(index, 'properties.time', "'properties.time' must be a non-negative number of seconds or milliseconds", sentInsertId);
  }
  if (rules.strictTime) {
    if (time < MIN_STRICT_TIME_MS) return rejection(index, 'properties.time', "'properties.time' is before 1971-01-01", sentInsertId);
    if (time > rules.now + FUTURE_SLACK_MS) {
      return rejection(index, 'properties.time', "'properties.time' is more than 1 hour in the future", sentInsertId);
    }
  }
  if (rules.maxAgeMs !== undefined && time < rules.now - rules.maxAgeMs) {
    return rejection(index, 'properties.time', `'properties.time' is older than ${Math.round(rules.maxAgeMs / 86_400_000)} days; use /import`, sentInsertId);
  }

  const idMerge = rules.idMerge ?? 'simplified';
  // With the simplified ID merge, $user_id / $device_id may stand in for a missing distinct_id.
  const idsDecide = idMerge === 'simplified' && (props.$user_id != null || props.$device_id != null);
  const rawDistinct = props.distinct_id === undefined && idsDecide ? '' : props.distinct_id;
  if (typeof rawDistinct !== 'string' && !(typeof rawDistinct === 'number' && Number.isFinite(rawDistinct))) {
    return rejection(index, 'properties.distinct_id', "'properties.distinct_id' must be a string", sentInsertId);
  }
  if (String(rawDistinct).length > 255) return rejection(index, 'properties.distinct_id', "'properties.distinct_id' must be at most 255 characters", sentInsertId);
  const identity = resolveEventIdentity(idMerge, String(rawDistinct), props);
  if (!identity.ok) return rejection(index, identity.field, identity.message, sentInsertId);
  const distinctId = identity.identity.distinctId;

  if (sentInsertId !== undefined && !isValidInsertId(sentInsertId)) {
    return rejection(index, 'properties.$insert_id', "'properties.$insert_id' must be 1-36 characters of [A-Za-z0-9-]", sentInsertId);
  }

  if (isUnstorableString(raw.event)) return rejection(index, 'event', UNSTORABLE_MESSAGE, sentInsertId);
  if (isUnstorableString(distinctId)) return rejection(index, 'properties.distinct_id', UNSTORABLE_MESSAGE, sentInsertId);

  const properties: Record<string, unknown> = {};
  const size = { n: raw.event.length + distinctId.length + 40 };
  let count = 0;
  for (const k in props) {
    count += 1;
    if (k === 'time' || k === 'distinct_id' || k === '$insert_id' || k === 'token') continue;
    const v = props[k];
    if (v === undefined) continue;
    size.n += k.length + 4;
    if (isUnstorableString(k)) return rejection(index, 'properties', `property name ${JSON.stringify(k)}: ${UNSTORABLE_MESSAGE}`, sentInsertId);
    const depth = inspect(v, rules.maxDepth, 0, size);
    if (depth === UNSTORABLE) return rejection(index, `properties.${k}`, UNSTORABLE_MESSAGE, sentInsertId);
    if (depth > rules.maxDepth) {
      return rejection(index, `properties.${k}`, `property nesting must not exceed ${rules.maxDepth} levels`, sentInsertId);
    }
    setData(properties, k, v);
  }
  if (count >= rules.maxProperties) {
    return rejection(index, 'properties', `an event must have fewer than ${rules.maxProperties} properties`, sentInsertId);
  }

  // The canonical body is needed for a derived insert id; otherwise the exact size is only
  // worth computing when the rough one says the event could be near the limit (a JSON escape
  // is at most 6 characters per character).
  let insertId = sentInsertId as string | undefined;
  let bodyLength = 0;
  if (insertId === undefined) {
    const bodyForId = canonicalJson({ event: raw.event, properties: { ...properties, time, distinct_id: distinctId } });
    bodyLength = bodyForId.length;
    if (bodyLength <= rules.maxEventBytes) insertId = deterministicInsertId([bodyForId]);
  } else if (size.n * 6 > rules.maxEventBytes) {
    bodyLength = JSON.stringify({ event: raw.event, properties: { ...properties, time, distinct_id: distinctId } }).length;
  }
  if (bodyLength > rules.maxEventBytes) {
    return rejection(index, '', `event exceeds ${rules.maxEventBytes} bytes`, sentInsertId);
  }
  const { deviceId, link } = identity.identity;
  const event: NormalizedEvent = { event: raw.event, distinctId, time, insertId: insertId!, properties };
  if (deviceId !== undefined) event.deviceId = deviceId;
  if (link) event.link = link;
  return { ok: true, event };
}
