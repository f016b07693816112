/**
 * Read side of user and group profiles for `/api/2.0/engage`: pages in id order (keyset, so a
 * scan never holds the connection between pages) and lookups by id.
 */
import { parseJson, toNumber, type DbOrTrx } from './knex.js';

/** A user profile (`groupKey` absent) or a group profile; `id` is the distinct_id or group_id. */
export interface ProfileRow {
  id: string;
  properties: Record<string, unknown>;
  updatedAt: number;
}

export interface ProfileScope {
  projectId: number;
  /** Group profiles of this group key; absent: user profiles. */
  groupKey?: string;
}

function base(db: DbOrTrx, scope: ProfileScope) {
  return scope.groupKey === undefined
    ? db('profiles').select('distinct_id as id', 'properties', 'updated_at').where('project_id', scope.projectId)
    : db('group_profiles')
        .select('group_id as id', 'properties', 'updated_at')
        .where('project_id', scope.projectId)
        .andWhere('group_key', scope.groupKey);
}

function idColumn(scope: ProfileScope): string {
  return scope.groupKey === undefined ? 'distinct_id' : 'group_id';
}

function toRow(r: Record<string, unknown>): ProfileRow {
  return { id: r.id as string, properties: parseJson(r.properties) ?? {}, updatedAt: toNumber(r.updated_at) };
}

/** Profiles after `afterId` in id order. */
export async function pageProfiles(db: DbOrTrx, scope: ProfileScope, limit: number, afterId?: string): Promise<ProfileRow[]> {
  let q = base(db, scope).orderBy(idColumn(scope)).limit(limit);
  if (afterId !== undefined) q = q.andWhere(idColumn(scope), '>', afterId);
  return (await q).map(toRow);
}

/** Profiles `offset` rows into id order (the engage `page` without a filter). */
export async function profilesAt(db: DbOrTrx, scope: ProfileScope, offset: number, limit: number): Promise<ProfileRow[]> {
  return (await base(db, scope).orderBy(idColumn(scope)).offset(offset).limit(limit)).map(toRow);
}

export async function profilesByIds(db: DbOrTrx, scope: ProfileScope, ids: readonly string[]): Promise<ProfileRow[]> {
  const out: ProfileRow[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await base(db, scope).whereIn(idColumn(scope), ids.slice(i, i + 500)).orderBy(idColumn(scope));
    out.push(...rows.map(toRow));
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export async function countProfilesIn(db: DbOrTrx, scope: ProfileScope): Promise<number> {
  const q =
    scope.groupKey === undefined
      ? db('profiles').where('project_id', scope.projectId)
      : db('group_profiles').where({ project_id: scope.projectId, group_key: scope.groupKey });
  const row = await q.count({ n: '*' }).first();
  return toNumber(row?.n ?? 0);
}
