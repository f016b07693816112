import crypto from 'node:crypto';

/** Mixpanel's rule for `$insert_id`: at most 36 characters of letters, digits and '-'. */
export const INSERT_ID_PATTERN = /^[A-Za-z0-9-]{1,36}$/;

export function isValidInsertId(value: unknown): value is string {
  return typeof value === 'string' && INSERT_ID_PATTERN.test(value);
}

/**
 * A deterministic insert id from the given parts: 32 hex chars of sha256 over the parts joined by
 * a separator that cannot occur inside a JSON-encoded part. Same parts, same id, always.
 */
export function deterministicInsertId(parts: readonly unknown[]): string {
  const h = crypto.createHash('sha256');
  for (const p of parts) h.update(JSON.stringify(p ?? null)).update('\u0000');
  return h.digest('hex').slice(0, 32);
}
