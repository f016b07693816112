/**
 * User profiles (`profiles`) and group profiles (`group_profiles`): one row per entity with its
 * properties and per-property `$set`/`$unset` times as JSON. The write path loads every row a
 * request touches in one query per chunk, applies the updates in memory, and writes the changed
 * rows back as one multi-row upsert per chunk (plus one delete for `$delete`d ones).
 *
 * Concurrency: SQLite has one connection, so transactions are serial. On Postgres two requests
 * touching the same profile would race read-modify-write (and both may insert a new row), so a
 * transaction first takes transaction-scoped advisory locks on hash stripes of its keys, in
 * sorted order (no deadlocks). Striping bounds the locks per transaction at STRIPES, far below
 * Postgres' shared lock table, whatever the batch size.
 */
import type { ProfileState } from '../domain/profile-ops.js';
import type { ProfileKey, ProfileKind } from '../domain/profile-update.js';
import { dialect, parseJson, rawRows, toJson, toNumber, type DbOrTrx } from './knex.js';

const TABLES = {
  user: { table: 'profiles', cols: ['distinct_id'], lockSpace: 0x70726f66 },
  group: { table: 'group_profiles', cols: ['group_key', 'group_id'], lockSpace: 0x67727570 },
} as const;

const STRIPES = 128;
const READ_CHUNK = 500;
const WRITE_CHUNK = 200;

/** The identifying column values of a key, in column order. */
function idsOf(key: ProfileKey): string[] {
  return key.kind === 'user' ? [key.distinctId] : [key.groupKey, key.groupId];
}

/** A map key for a profile key (NUL cannot appear in JSON-decoded ids sent by sane clients, and is only a separator here). */
export function profileKeyString(key: ProfileKey): string {
  return idsOf(key).join('\u0000');
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function stripeOf(s: string): number {
  // FNV-1a, 32 bit: cheap and well spread.
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % STRIPES;
}

/** Postgres only (a no-op on SQLite): serialises transactions touching the same profiles. */
export async function lockProfileKeys(db: DbOrTrx, kind: ProfileKind, projectId: number, keys: readonly ProfileKey[]): Promise<void> {
  if (dialect(db) !== 'postgres' || keys.length === 0) return;
  const base = (projectId & 0xffffff) * STRIPES;
  const stripes = [...new Set(keys.map((k) => base + stripeOf(profileKeyString(k))))].sort((a, b) => a - b);
  await db.raw('SELECT pg_advisory_xact_lock(?::int, s) FROM unnest(?::int[]) AS s', [TABLES[kind].lockSpace, stripes]);
}

const PG_CHUNK = 5000;

/** Postgres: one statement per chunk, the ids as arrays (unnest) rather than thousands of parameters. */
function pgLoadSql(kind: ProfileKind): string {
  const { table, cols } = TABLES[kind];
  const u = cols.map((_, i) => `c${i}`);
  return (
    `SELECT ${cols.map((c) => `t.${c}`).join(', ')}, t.properties, t.property_times FROM ${table} t ` +
    `JOIN unnest(${cols.map(() => '?::text[]').join(', ')}) AS u(${u.join(', ')}) ON ${cols.map((c, i) => `t.${c} = u.${u[i]}`).join(' AND ')} ` +
    'WHERE t.project_id = ?'
  );
}

function pgUpsertSql(kind: ProfileKind): string {
  const { table, cols } = TABLES[kind];
  const u = cols.map((_, i) => `c${i}`);
  return (
    `INSERT INTO ${table} (project_id, ${cols.join(', ')}, properties, property_times, updated_at) ` +
    `SELECT ?::int, ${u.join(', ')}, p::jsonb, t::jsonb, ?::bigint ` +
    `FROM unnest(${cols.map(() => '?::text[]').join(', ')}, ?::text[], ?::text[]) AS u(${u.join(', ')}, p, t) ` +
    `ON CONFLICT (project_id, ${cols.join(', ')}) DO UPDATE SET ` +
    'properties = excluded.properties, property_times = excluded.property_times, updated_at = excluded.updated_at'
  );
}

function stateOf(row: Record<string, unknown>): ProfileState {
  return {
    properties: parseJson<Record<string, unknown>>(row.properties) ?? {},
    propertyTimes: parseJson<Record<string, number>>(row.property_times) ?? {},
  };
}

/** The stored state of every given profile that exists, by `profileKeyString`. */
export async function loadProfileStates(
  db: DbOrTrx,
  kind: ProfileKind,
  projectId: number,
  keys: readonly ProfileKey[],
): Promise<Map<string, ProfileState>> {
  const { table, cols } = TABLES[kind];
  const out = new Map<string, ProfileState>();
  const unique = [...new Map(keys.map((k) => [profileKeyString(k), k])).values()];
  if (dialect(db) === 'postgres') {
    for (const part of chunks(unique, PG_CHUNK)) {
      const res = await db.raw(pgLoadSql(kind), [...cols.map((_, i) => part.map((k) => idsOf(k)[i]!)), projectId]);
      for (const row of rawRows(db, res)) out.set(cols.map((c) => row[c] as string).join('\u0000'), stateOf(row));
    }
    return out;
  }
  for (const part of chunks(unique, READ_CHUNK)) {
    const query = db(table)
      .select(...cols, 'properties', 'property_times')
      .where('project_id', projectId);
    const rows =
      kind === 'user'
        ? await query.whereIn('distinct_id', part.map((k) => idsOf(k)[0]!))
        : await query.whereIn([...cols], part.map(idsOf));
    for (const row of rows) out.set(cols.map((c) => row[c] as string).join('\u0000'), stateOf(row));
  }
  return out;
}

export interface ProfileWrite {
  key: ProfileKey;
  /** null: the profile must not exist (deleted). */
  state: ProfileState | null;
}

/** Writes final states: upserts the present ones, deletes the absent ones. */
export async function writeProfileStates(
  db: DbOrTrx,
  kind: ProfileKind,
  projectId: number,
  writes: readonly ProfileWrite[],
  now: number,
): Promise<void> {
  const { table, cols } = TABLES[kind];
  const upserts = writes.filter((w) => w.state !== null);
  const deletes = writes.filter((w) => w.state === null);
  for (const part of chunks(deletes, READ_CHUNK)) {
    const q = db(table).where('project_id', projectId);
    if (kind === 'user') await q.whereIn('distinct_id', part.map((w) => idsOf(w.key)[0]!)).delete();
    else await q.whereIn([...cols], part.map((w) => idsOf(w.key))).delete();
  }
  if (dialect(db) === 'postgres') {
    for (const part of chunks(upserts, PG_CHUNK)) {
      await db.raw(pgUpsertSql(kind), [
        projectId,
        now,
        ...cols.map((_, i) => part.map((w) => idsOf(w.key)[i]!)),
        part.map((w) => toJson(w.state!.properties)),
        part.map((w) => toJson(w.state!.propertyTimes)),
      ]);
    }
    return;
  }
  for (const part of chunks(upserts, WRITE_CHUNK)) {
    const rows = part.map((w) => {
      const row: Record<string, unknown> = { project_id: projectId };
      idsOf(w.key).forEach((v, i) => (row[cols[i]!] = v));
      row.properties = toJson(w.state!.properties);
      row.property_times = toJson(w.state!.propertyTimes);
      row.updated_at = now;
      return row;
    });
    await db(table)
      .insert(rows)
      .onConflict(['project_id', ...cols])
      .merge(['properties', 'property_times', 'updated_at']);
  }
}

export interface StoredProfile {
  properties: Record<string, unknown>;
  propertyTimes: Record<string, number>;
  updatedAt: number;
}

/** One stored profile (or group profile), for read paths and tests. */
export async function findProfile(db: DbOrTrx, projectId: number, key: ProfileKey): Promise<StoredProfile | undefined> {
  const kind = key.kind;
  const { table, cols } = TABLES[kind];
  const where: Record<string, unknown> = { project_id: projectId };
  idsOf(key).forEach((v, i) => (where[cols[i]!] = v));
  const row = await db(table).where(where).first();
  return row ? { ...stateOf(row), updatedAt: toNumber(row.updated_at) } : undefined;
}

export async function countProfiles(db: DbOrTrx, kind: ProfileKind, projectId: number): Promise<number> {
  const row = await db(TABLES[kind].table).where('project_id', projectId).count({ n: '*' }).first();
  return toNumber(row?.n ?? 0);
}
