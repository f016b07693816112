/**
 * Export scan over the SQL stores. Pages are keyed on (time, id) — the order of the
 * (project_id, time) index, whose entries end in the row id (SQLite: the rowid; Postgres:
 * migration 006) — so each page is an index range scan and nothing holds a cursor (or the single
 * SQLite connection) between pages.
 */
import { dialect, parseJson, rawRows, toNumber, type DbOrTrx } from '../../db/knex.js';
import type { ScanQuery, StoredEvent } from '../event-store.js';
import { planWhere } from '../where-plan.js';
import { filterSql, RESOLVED_ID_LOOKUP } from './filter-sql.js';
import type { Binding } from './where-sql.js';

export async function* scanSql(db: DbOrTrx, q: ScanQuery): AsyncGenerator<StoredEvent[]> {
  const d = dialect(db);
  const cond = q.where ? planWhere(q.where) : undefined;
  if (q.where && !cond) throw new Error('this `where` expression cannot be pushed down (check canPushDown first)');
  let after: { time: number; id: number } | undefined;
  for (;;) {
    // After the first page `time >= t` bounds the index range; the OR only settles ties at t.
    const from = after ? Math.max(after.time, q.fromMs) : q.fromMs;
    const filter = filterSql(d, { ...q, fromMs: from }, cond);
    const keyset = after ? ' AND (e.time > ? OR e.id > ?)' : '';
    const sql =
      `SELECT e.id, e.event, e.distinct_id, e.time, e.insert_id, e.properties, ${RESOLVED_ID_LOOKUP} AS resolved_id ` +
      `FROM events e WHERE ${filter.sql}${keyset} ORDER BY e.time, e.id LIMIT ?`;
    const bindings: Binding[] = [...filter.bindings, ...(after ? [after.time, after.id] : []), q.pageSize];
    const rows = rawRows(db, await db.raw(sql, bindings));
    if (rows.length === 0) return;
    const last = rows[rows.length - 1]!;
    after = { time: toNumber(last.time), id: toNumber(last.id) };
    yield rows.map((r) => ({
      event: r.event as string,
      distinctId: r.distinct_id as string,
      time: toNumber(r.time),
      insertId: r.insert_id as string,
      properties: parseJson(r.properties),
      resolvedId: r.resolved_id as string,
    }));
    if (rows.length < q.pageSize) return;
  }
}
