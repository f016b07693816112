/**
 * Amplitude export record → event record in the /import shape, plus the user properties it
 * carries. Pure: any input yields a value, never an exception.
 *
 * Decisions (docs/migration.md has the user-facing table):
 * - distinct_id follows the simplified ID merge rule: the user ID, else `$device:<device_id>`.
 * - `$insert_id` is Amplitude's own when it is a valid insert id; otherwise a hash of event
 *   name, user ID, event time and `amplitude_id`, so an export read twice yields the same ids.
 * - Property precedence, lowest first: group_properties, groups (group type → group value, the
 *   way group analytics keys events), Amplitude's device/location context, event_properties, and
 *   finally the identity and provenance properties, which no source property may override.
 * - The provenance stamps (`$import`, `$source`, `$migration_id`) never enter the insert id, so
 *   a second migration of the same data produces identical dedupe keys and stores nothing new.
 */
import { canonicalJson } from './canonical-json.js';
import { deterministicInsertId, isValidInsertId } from './insert-id.js';

/** The `$source` value of every migrated Amplitude event (one value to filter all of them by). */
export const AMPLITUDE_SOURCE = 'amplitude-migration';

/** Amplitude context fields carried as properties, under Mixpanel's names where one exists. */
const CONTEXT_FIELDS: readonly (readonly [string, string])[] = [
  ['city', '$city'],
  ['region', '$region'],
  ['country', '$country'],
  ['os_name', '$os'],
  ['os_version', '$os_version'],
  ['device_model', '$model'],
  ['device_manufacturer', '$manufacturer'],
  ['device_brand', '$brand'],
  ['device_carrier', '$carrier'],
  ['platform', '$platform'],
  ['language', '$language'],
  ['version_name', '$app_version_string'],
  ['amplitude_id', '$amplitude_id'],
  ['session_id', '$amplitude_session_id'],
];

export interface AmplitudeImportRecord {
  event: string;
  properties: Record<string, unknown> & { time: number; distinct_id: string; $insert_id: string };
}

/** A `$set` candidate: the user properties as of this event. */
export interface AmplitudeUserSnapshot {
  distinctId: string;
  /** Event time, epoch ms: the latest snapshot per user wins. */
  time: number;
  properties: Record<string, unknown>;
}

export type AmplitudeOutcome =
  | { ok: true; record: AmplitudeImportRecord; user?: AmplitudeUserSnapshot }
  | { ok: false; message: string };

export interface AmplitudeTransformOptions {
  /** Stamped as `$migration_id` on every event. */
  migrationId: string;
}

/** Two or four ASCII digits at `at` as a number, or -1. */
function digits(s: string, at: number, n: number): number {
  let v = 0;
  for (let i = at; i < at + n; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/**
 * Amplitude's "2024-01-02 03:04:05.678000" (UTC; ISO 8601 with 'T' and 'Z' or +00:00 accepted
 * too) → epoch ms, microseconds truncated. Hand-parsed: it runs once per migrated event.
 */
export function parseAmplitudeTime(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const s = value.trim();
  if (s.length < 19 || s[4] !== '-' || s[7] !== '-' || (s[10] !== ' ' && s[10] !== 'T') || s[13] !== ':' || s[16] !== ':') return undefined;
  const y = digits(s, 0, 4);
  const mo = digits(s, 5, 2);
  const d = digits(s, 8, 2);
  const h = digits(s, 11, 2);
  const mi = digits(s, 14, 2);
  const sec = digits(s, 17, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59) return undefined;
  let i = 19;
  let ms = 0;
  if (s[i] === '.') {
    let n = 0;
    for (i += 1; i < s.length && n < 9; i++, n++) {
      const c = s.charCodeAt(i) - 48;
      if (c < 0 || c > 9) break;
      if (n < 3) ms = ms * 10 + c;
    }
    if (n === 0) return undefined;
    if (n < 3) ms *= n === 1 ? 100 : 10;
  }
  const zone = s.slice(i);
  if (zone !== '' && zone !== 'Z' && zone !== '+00:00' && zone !== '+0000' && zone !== '-00:00' && zone !== '-0000') return undefined;
  const t = Date.UTC(y, mo - 1, d, h, mi, sec, ms);
  // Date.UTC rolls 2024-02-30 over into March: refuse dates that do not exist.
  if (d > 28 && new Date(t).getUTCDate() !== d) return undefined;
  return t >= 0 ? t : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A usable identifier: a non-empty string (numbers are passed through as strings). */
function idOf(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return undefined;
  return value.length > 0 ? value : undefined;
}

/** Profile property names the profile store refuses (see profile-update.ts). */
function usablePropertyName(name: string): boolean {
  return name.length > 0 && name.length <= 255 && name !== '__proto__';
}

function assignAll(target: Record<string, unknown>, source: unknown): void {
  if (!isPlainObject(source)) return;
  for (const k in source) {
    const v = source[k];
    // Identity keys are set by the transform itself (skipping them here avoids a `delete`,
    // which would also push the object into V8's slow dictionary mode).
    if (v !== undefined && k !== '__proto__' && k !== '$user_id' && k !== '$device_id') target[k] = v;
  }
}

export function transformAmplitudeEvent(raw: unknown, options: AmplitudeTransformOptions): AmplitudeOutcome {
  if (!isPlainObject(raw)) return { ok: false, message: 'record is not a JSON object' };
  const event = raw.event_type;
  if (typeof event !== 'string' || event.length === 0) return { ok: false, message: "'event_type' is missing or empty" };
  const time = parseAmplitudeTime(raw.event_time);
  if (time === undefined) return { ok: false, message: `'event_time' is missing or not 'YYYY-MM-DD HH:MM:SS[.ffffff]' UTC` };
  const userId = idOf(raw.user_id);
  const deviceId = idOf(raw.device_id);
  if (userId === undefined && deviceId === undefined) return { ok: false, message: "record has neither 'user_id' nor 'device_id'" };
  const distinctId = userId ?? `$device:${deviceId}`;

  const sourceInsertId = raw.$insert_id;
  const insertId = isValidInsertId(sourceInsertId)
    ? sourceInsertId
    : deterministicInsertId([event, userId ?? null, time, raw.amplitude_id ?? null]);

  const properties: Record<string, unknown> = {};
  assignAll(properties, raw.group_properties);
  assignAll(properties, raw.groups);
  for (const [from, to] of CONTEXT_FIELDS) {
    const v = raw[from];
    if (v !== null && v !== undefined && v !== '') properties[to] = v;
  }
  assignAll(properties, raw.event_properties);
  if (userId !== undefined) properties.$user_id = userId;
  if (deviceId !== undefined) properties.$device_id = deviceId;
  properties.$import = true;
  properties.$source = AMPLITUDE_SOURCE;
  properties.$migration_id = options.migrationId;
  properties.time = time;
  properties.distinct_id = distinctId;
  properties.$insert_id = insertId;

  const record = { event, properties } as AmplitudeImportRecord;
  // Profiles only for identified users: device-only activity has no user to attach them to
  // (the same rule as warehouse user tables, where null user IDs are excluded).
  if (userId === undefined || !isPlainObject(raw.user_properties)) return { ok: true, record };
  const userProps: Record<string, unknown> = {};
  let any = false;
  const source = raw.user_properties;
  for (const k in source) {
    const v = source[k];
    if (v === undefined || !usablePropertyName(k)) continue;
    userProps[k] = v;
    any = true;
  }
  return any ? { ok: true, record, user: { distinctId: userId, time, properties: userProps } } : { ok: true, record };
}

/**
 * Of two snapshots of one user, the one that wins: the later event; at equal times the larger
 * canonical JSON, so the outcome never depends on the order the export was read in.
 */
export function laterSnapshot(a: AmplitudeUserSnapshot, b: AmplitudeUserSnapshot): AmplitudeUserSnapshot {
  return laterByRule(a, b, (s) => canonicalJson(s.properties));
}

/** The same rule for snapshots whose properties are already canonical JSON (the staged form). */
export function laterStagedSnapshot<T extends { time: number; properties: string }>(a: T, b: T): T {
  return laterByRule(a, b, (s) => s.properties);
}

function laterByRule<T extends { time: number }>(a: T, b: T, canonical: (s: T) => string): T {
  if (a.time !== b.time) return a.time > b.time ? a : b;
  return canonical(a) >= canonical(b) ? a : b;
}
