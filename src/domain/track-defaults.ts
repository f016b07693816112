/**
 * /track is client-side tracking: Mixpanel fills `time` with the time of receipt when a record
 * has none, and accepts events without a `distinct_id` (not tied to a user). This applies those
 * defaults before the shared validation, so everything else behaves as on /import.
 */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The record with `time` = `now` (ms) and `distinct_id` = '' when absent; anything else as is. */
export function withTrackDefaults(raw: unknown, now: number): unknown {
  if (!isPlainObject(raw)) return raw;
  const props = raw.properties === undefined ? {} : raw.properties;
  if (!isPlainObject(props)) return raw;
  if (props.time !== undefined && props.distinct_id !== undefined) return raw;
  return {
    ...raw,
    properties: { ...props, time: props.time ?? now, distinct_id: props.distinct_id ?? '' },
  };
}
