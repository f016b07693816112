/**
 * The simplified ID merge (docs/identity.md), as pure rules applied to each event
 * record by the one write path before it is stored:
 * - `$user_id` present: the event is that user's; its distinct_id becomes the user id. With a
 *   `$device_id` too, it links that device to the user (the store keeps the FIRST link of a
 *   device, for good).
 * - only `$device_id`: the event is anonymous; its distinct_id is `$device:<device_id>` when the
 *   client sent none (a client-sent one is kept), and it carries the device id so that reads can
 *   resolve it to the device's user once a link exists — however much later.
 * - neither: the distinct_id as sent; a sent `$device:<d>` is anonymous on device `d` (what a
 *   Mixpanel export of a simplified project contains).
 * `original` projects keep distinct_id as sent and make no links.
 *
 * Defined edge cases (never a 500): an id over MAX_ID_BYTES, a `$user_id` that starts with the
 * `$device:` prefix (it would read as an anonymous device everywhere), or an id that is not a
 * string or finite number — the record is rejected with a field and a message.
 */

export type IdMerge = 'simplified' | 'original';

export const DEVICE_PREFIX = '$device:';
/** Longest `$user_id` / `$device_id` accepted, in UTF-8 bytes. */
export const MAX_ID_BYTES = 255;

/** What the rules decide for one event. */
export interface EventIdentity {
  /** The distinct_id to store (part of the dedupe key). */
  distinctId: string;
  /** The device an anonymous event was done on (absent for a user's event). */
  deviceId?: string;
  /** A device → user link this event carries. */
  link?: { deviceId: string; userId: string };
}

export type IdentityOutcome = { ok: true; identity: EventIdentity } | { ok: false; field: string; message: string };

/** An id property as a string: absent/null/'' → undefined; a finite number → its text. */
function idOf(value: unknown): string | undefined | null {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

function tooLong(id: string): boolean {
  // Cheap check first: a string of at most MAX/3 UTF-16 units cannot exceed MAX bytes.
  return id.length > MAX_ID_BYTES / 3 && Buffer.byteLength(id, 'utf8') > MAX_ID_BYTES;
}

/**
 * The identity of an event from its sent `distinct_id` (already a string; '' when none was
 * sent) and its `$user_id` / `$device_id` properties.
 */
export function resolveEventIdentity(mode: IdMerge, sentDistinctId: string, props: Readonly<Record<string, unknown>>): IdentityOutcome {
  if (mode === 'original') return { ok: true, identity: { distinctId: sentDistinctId } };
  const userId = idOf(props.$user_id);
  const deviceId = idOf(props.$device_id);
  if (userId === null) return { ok: false, field: 'properties.$user_id', message: "'properties.$user_id' must be a string" };
  if (deviceId === null) return { ok: false, field: 'properties.$device_id', message: "'properties.$device_id' must be a string" };
  if (userId !== undefined) {
    if (tooLong(userId)) return { ok: false, field: 'properties.$user_id', message: `'properties.$user_id' must be at most ${MAX_ID_BYTES} bytes` };
    if (userId.startsWith(DEVICE_PREFIX)) {
      return { ok: false, field: 'properties.$user_id', message: `'properties.$user_id' must not start with '${DEVICE_PREFIX}' (that prefix marks anonymous device ids)` };
    }
  }
  if (deviceId !== undefined && tooLong(deviceId)) {
    return { ok: false, field: 'properties.$device_id', message: `'properties.$device_id' must be at most ${MAX_ID_BYTES} bytes` };
  }
  if (userId !== undefined) {
    return { ok: true, identity: deviceId !== undefined ? { distinctId: userId, link: { deviceId, userId } } : { distinctId: userId } };
  }
  if (deviceId !== undefined) {
    return { ok: true, identity: { distinctId: sentDistinctId === '' ? DEVICE_PREFIX + deviceId : sentDistinctId, deviceId } };
  }
  if (sentDistinctId.startsWith(DEVICE_PREFIX) && sentDistinctId.length > DEVICE_PREFIX.length) {
    return { ok: true, identity: { distinctId: sentDistinctId, deviceId: sentDistinctId.slice(DEVICE_PREFIX.length) } };
  }
  return { ok: true, identity: { distinctId: sentDistinctId } };
}

/**
 * The device a distinct id names for an identities lookup: `$device:<d>` → `d`; anything else
 * is taken as a user id (undefined).
 */
export function deviceOfDistinctId(distinctId: string): string | undefined {
  return distinctId.startsWith(DEVICE_PREFIX) && distinctId.length > DEVICE_PREFIX.length ? distinctId.slice(DEVICE_PREFIX.length) : undefined;
}
