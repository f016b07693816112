/**
 * Validation and normalisation of one event record as sent to /import, /track, a sync, a
 * migration or a batch import. Pure: any input yields either a normalised event or a rejection
 * value, never an exception.
 */
import { canonicalJson } from './canonical-json.js';
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
}

export interface RecordRejection {
  index: number;
  $insert_id?: string;
  field: string;
  message: string;
}

export type RecordOutcome = { ok: true; event: NormalizedEvent } | { ok: false; reject: RecordRejection };

const MIN_STRICT_TIME_MS = Date.UTC(1971, 0, 1);
const FUTURE_SLACK_MS = 60 * 60 * 1000;

/** Mixpanel's rule: a time below 1e11 is seconds, anything else milliseconds. */
export function normalizeTime(value: unknown): number | undefined {
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(value)) n = Number(value);
  else return undefined;
  if (!Number.isFinite(n) || n < 0) return undefined;
  const ms = n < 1e11 ? n * 1000 : n;
  return Math.round(ms);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Depth of nested objects/arrays below a property value (a scalar is 0). */
function depthOf(value: unknown, limit: number, depth = 0): number {
  if (depth > limit) return depth;
  if (Array.isArray(value)) {
    let max = depth + 1;
    for (const v of value) max = Math.max(max, depthOf(v, limit, depth + 1));
    return max;
  }
  if (isPlainObject(value)) {
    let max = depth + 1;
    for (const v of Object.values(value)) max = Math.max(max, depthOf(v, limit, depth + 1));
    return max;
  }
  return depth;
}

export function validateEventRecord(raw: unknown, index: number, rules: EventRules): RecordOutcome {
  const reject = (field: string, message: string, insertId?: unknown): RecordOutcome => ({
    ok: false,
    reject: { index, ...(typeof insertId === 'string' ? { $insert_id: insertId } : {}), field, message },
  });

  if (!isPlainObject(raw)) return reject('', 'record must be a JSON object');
  const props = raw.properties;
  const sentInsertId = isPlainObject(props) ? props.$insert_id : undefined;
  if (typeof raw.event !== 'string' || raw.event.length === 0) {
    return reject('event', "'event' must be a non-empty string", sentInsertId);
  }
  if (raw.event.length > 255) return reject('event', "'event' must be at most 255 characters", sentInsertId);
  if (!isPlainObject(props)) return reject('properties', "'properties' must be a JSON object", sentInsertId);

  const time = normalizeTime(props.time);
  if (props.time === undefined) return reject('properties.time', "'properties.time' is required", sentInsertId);
  if (time === undefined) {
    return reject('properties.time', "'properties.time' must be a non-negative number of seconds or milliseconds", sentInsertId);
  }
  if (rules.strictTime) {
    if (time < MIN_STRICT_TIME_MS) return reject('properties.time', "'properties.time' is before 1971-01-01", sentInsertId);
    if (time > rules.now + FUTURE_SLACK_MS) {
      return reject('properties.time', "'properties.time' is more than 1 hour in the future", sentInsertId);
    }
  }
  if (rules.maxAgeMs !== undefined && time < rules.now - rules.maxAgeMs) {
    return reject('properties.time', `'properties.time' is older than ${Math.round(rules.maxAgeMs / 86_400_000)} days; use /import`, sentInsertId);
  }

  const rawDistinct = props.distinct_id;
  if (typeof rawDistinct !== 'string' && !(typeof rawDistinct === 'number' && Number.isFinite(rawDistinct))) {
    return reject('properties.distinct_id', "'properties.distinct_id' must be a string", sentInsertId);
  }
  const distinctId = String(rawDistinct);
  if (distinctId.length > 255) return reject('properties.distinct_id', "'properties.distinct_id' must be at most 255 characters", sentInsertId);

  if (sentInsertId !== undefined && !isValidInsertId(sentInsertId)) {
    return reject('properties.$insert_id', "'properties.$insert_id' must be 1-36 characters of [A-Za-z0-9-]", sentInsertId);
  }

  const properties: Record<string, unknown> = {};
  let count = 0;
  for (const [k, v] of Object.entries(props)) {
    count += 1;
    if (k === 'time' || k === 'distinct_id' || k === '$insert_id' || k === 'token') continue;
    if (v === undefined) continue;
    if (depthOf(v, rules.maxDepth) > rules.maxDepth) {
      return reject(`properties.${k}`, `property nesting must not exceed ${rules.maxDepth} levels`, sentInsertId);
    }
    properties[k] = v;
  }
  if (count >= rules.maxProperties) {
    return reject('properties', `an event must have fewer than ${rules.maxProperties} properties`, sentInsertId);
  }

  const bodyForId = canonicalJson({ event: raw.event, properties: { ...properties, time, distinct_id: distinctId } });
  if (bodyForId.length > rules.maxEventBytes) {
    return reject('', `event exceeds ${rules.maxEventBytes} bytes`, sentInsertId);
  }
  const insertId = (sentInsertId as string | undefined) ?? deterministicInsertId([bodyForId]);
  return { ok: true, event: { event: raw.event, distinctId, time, insertId, properties } };
}
