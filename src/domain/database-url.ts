/**
 * DATABASE_URL's forms, the one rule config and src/db both apply: `postgres://` or
 * `postgresql://` is PostgreSQL, `sqlite:`/`sqlite://` or a plain path is SQLite, the scheme in
 * any case (returned lower-cased). Any other `scheme://` is unsupported: taken for a path, it
 * used to become a SQLite file of that name.
 */
export type DatabaseUrl = { dialect: 'postgres' | 'sqlite'; url: string } | { unsupported: string };

export function parseDatabaseUrl(raw: string): DatabaseUrl {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):(\/\/)?/.exec(raw);
  if (!scheme) return { dialect: 'sqlite', url: raw };
  const lower = scheme[1]!.toLowerCase();
  const url = lower + raw.slice(scheme[1]!.length);
  if ((lower === 'postgres' || lower === 'postgresql') && scheme[2]) return { dialect: 'postgres', url };
  if (lower === 'sqlite') return { dialect: 'sqlite', url };
  return scheme[2] ? { unsupported: scheme[1]! } : { dialect: 'sqlite', url: raw };
}
