/** JSON with object keys sorted at every level, so equal content always serialises equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value as Record<string, unknown>).sort();
  const parts: string[] = [];
  for (const k of keys) {
    const v = (value as Record<string, unknown>)[k];
    if (v === undefined) continue;
    parts.push(`${JSON.stringify(k)}:${canonicalJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * Whether JSON.stringify already gives canonicalJson's text: an array of primitives, or an
 * object of primitives whose keys are in order. Most property values are, and the check is
 * cheaper than a second serialisation.
 */
export function isCanonicalAsIs(value: object): boolean {
  if (Array.isArray(value)) return value.every(isPrimitive);
  let last: string | undefined;
  for (const k of Object.keys(value)) {
    if (last !== undefined && k < last) return false;
    if (!isPrimitive((value as Record<string, unknown>)[k])) return false;
    last = k;
  }
  return true;
}

function isPrimitive(v: unknown): boolean {
  return v === null || typeof v !== 'object';
}
