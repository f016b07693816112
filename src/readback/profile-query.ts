/**
 * The engage query: user (or group) profiles by id, by list of ids, or all of them filtered by a
 * `where` expression over profile properties, one page at a time in id order.
 */
import type { DbOrTrx } from '../db/knex.js';
import { countProfilesIn, pageProfiles, profilesAt, profilesByIds, type ProfileRow, type ProfileScope } from '../db/profile-read.repo.js';
import type { Predicate } from '../domain/where-evaluate.js';

export interface ProfileQuery extends ProfileScope {
  ids?: readonly string[];
  /**
   * Asked id → the user it resolves to (simplified ID merge: `$device:<d>` of a linked device).
   * Such an id answers with the user's profile, or with its own while the user has none.
   */
  resolved?: ReadonlyMap<string, string>;
  where?: Predicate;
  page: number;
  pageSize: number;
}

export interface ProfilePage {
  rows: ProfileRow[];
  total: number;
}

const SCAN_PAGE = 1000;

export async function queryProfiles(db: DbOrTrx, q: ProfileQuery): Promise<ProfilePage> {
  const start = q.page * q.pageSize;
  const end = start + q.pageSize;
  if (q.ids) {
    const found = await profilesByIds(db, q, [...new Set([...q.ids, ...(q.resolved?.values() ?? [])])]);
    const stored = new Set(found.map((p) => p.id));
    const answered = new Set(
      q.ids.map((id) => {
        const user = q.resolved?.get(id);
        return user !== undefined && stored.has(user) ? user : id;
      }),
    );
    const matched = found.filter((p) => answered.has(p.id) && (!q.where || q.where(p.properties)));
    return { rows: matched.slice(start, end), total: matched.length };
  }
  if (!q.where) {
    const [rows, total] = [await profilesAt(db, q, start, q.pageSize), await countProfilesIn(db, q)];
    return { rows, total };
  }
  // A filter has to look at every profile to know the total; keep only the asked page.
  const rows: ProfileRow[] = [];
  let total = 0;
  let after: string | undefined;
  for (;;) {
    const batch = await pageProfiles(db, q, SCAN_PAGE, after);
    for (const p of batch) {
      if (!q.where(p.properties)) continue;
      if (total >= start && total < end) rows.push(p);
      total += 1;
    }
    if (batch.length < SCAN_PAGE) break;
    after = batch[batch.length - 1]!.id;
  }
  return { rows, total };
}
