/**
 * A connection URL without its credentials, for messages and logs (DATABASE_URL, REDIS_URL,
 * EVENT_STORE_URL). Everything up to the last `@` of the authority goes, so a password that
 * itself holds an unencoded `@` is not half-printed. A SQLite path passes unchanged.
 */
export function redactUrl(url: string): string {
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#]*@/, '$1***@');
}
