/**
 * Experiments in SQL. Times are epoch-ms bigints, JSON columns jsonb (Postgres) or text (SQLite);
 * the mapping to and from ExperimentRecord, and every dialect difference, lives here.
 */
import type { ExperimentRecord } from '../domain/experiment.js';
import type { ExperimentState, ExperimentStatus } from '../domain/experiment-state.js';
import { parseJson, toJson, toNumber, type DbOrTrx } from './knex.js';

const TABLE = 'experiments';
/** Rows per multi-row INSERT: ~30 columns each stays under SQLite's and Postgres's parameter limits. */
const INSERT_CHUNK = 500;

/** Fields an update may set (never id, workspace, creator or created). */
export type ExperimentChanges = Partial<
  Omit<ExperimentRecord, 'id' | 'workspaceId' | 'creator' | 'created' | 'lastModifiedBy'>
> &
  Pick<ExperimentRecord, 'lastModifiedBy' | 'modified'>;

const nullableMs = (v: unknown) => (v === null || v === undefined ? null : toNumber(v));

function toRecord(r: Record<string, unknown>): ExperimentRecord {
  const decision = parseJson<ExperimentRecord['decision']>(r.decision) ?? null;
  return {
    id: r.id as string,
    workspaceId: toNumber(r.workspace_id),
    name: r.name as string,
    contentType: r.content_type as string,
    description: (r.description as string | null) ?? null,
    hypothesis: (r.hypothesis as string | null) ?? null,
    status: r.status as ExperimentStatus,
    tags: parseJson<string[]>(r.tags),
    variants: parseJson<unknown[]>(r.variants),
    metrics: parseJson<unknown[]>(r.metrics),
    settings: parseJson(r.settings),
    exposuresCache: parseJson(r.exposures_cache),
    resultsCache: parseJson(r.results_cache),
    featureFlag: parseJson<Record<string, unknown> | null>(r.feature_flag) ?? null,
    decision,
    creator:
      r.creator_id === null || r.creator_id === undefined
        ? null
        : { id: toNumber(r.creator_id), name: r.creator_name as string, email: (r.creator_email as string | null) ?? null },
    lastModifiedBy: {
      id: toNumber(r.last_modified_by_id),
      name: r.last_modified_by_name as string,
      email: (r.last_modified_by_email as string | null) ?? null,
    },
    isFavorited: Boolean(r.is_favorited),
    isSharedWithProject: Boolean(r.is_shared_with_project),
    pinnedDate: (r.pinned_date as string | null) ?? null,
    created: toNumber(r.created),
    modified: toNumber(r.modified),
    deleted: nullableMs(r.deleted),
    startDate: nullableMs(r.start_date),
    endDate: nullableMs(r.end_date),
    archivedAt: nullableMs(r.archived_at),
  };
}

/** Column values for the given (partial) record; keys left undefined are not written. */
function toColumns(rec: Partial<ExperimentRecord>): Record<string, unknown> {
  const cols: Record<string, unknown> = {
    id: rec.id,
    workspace_id: rec.workspaceId,
    name: rec.name,
    content_type: rec.contentType,
    description: rec.description,
    hypothesis: rec.hypothesis,
    status: rec.status,
    tags: rec.tags === undefined ? undefined : toJson(rec.tags),
    variants: rec.variants === undefined ? undefined : toJson(rec.variants),
    metrics: rec.metrics === undefined ? undefined : toJson(rec.metrics),
    settings: rec.settings === undefined ? undefined : toJson(rec.settings),
    exposures_cache: rec.exposuresCache === undefined ? undefined : toJson(rec.exposuresCache),
    results_cache: rec.resultsCache === undefined ? undefined : toJson(rec.resultsCache),
    feature_flag: rec.featureFlag === undefined ? undefined : rec.featureFlag === null ? null : toJson(rec.featureFlag),
    decision: rec.decision === undefined ? undefined : rec.decision === null ? null : toJson(rec.decision),
    is_favorited: rec.isFavorited,
    is_shared_with_project: rec.isSharedWithProject,
    pinned_date: rec.pinnedDate,
    created: rec.created,
    modified: rec.modified,
    deleted: rec.deleted,
    start_date: rec.startDate,
    end_date: rec.endDate,
    archived_at: rec.archivedAt,
  };
  if (rec.creator !== undefined) {
    cols.creator_id = rec.creator?.id ?? null;
    cols.creator_name = rec.creator?.name ?? null;
    cols.creator_email = rec.creator?.email ?? null;
  }
  if (rec.lastModifiedBy !== undefined) {
    cols.last_modified_by_id = rec.lastModifiedBy.id;
    cols.last_modified_by_name = rec.lastModifiedBy.name;
    cols.last_modified_by_email = rec.lastModifiedBy.email;
  }
  for (const k of Object.keys(cols)) if (cols[k] === undefined) delete cols[k];
  return cols;
}

export async function insertExperiment(db: DbOrTrx, rec: ExperimentRecord): Promise<void> {
  await db(TABLE).insert(toColumns(rec));
}

/** Many at once, in multi-row INSERTs inside one transaction (seeding, tests, benches). */
export async function insertExperiments(db: DbOrTrx, recs: ExperimentRecord[]): Promise<void> {
  const rows = recs.map(toColumns);
  const write = async (trx: DbOrTrx) => {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) await trx(TABLE).insert(rows.slice(i, i + INSERT_CHUNK));
  };
  if ('commit' in db) await write(db);
  else await db.transaction(write);
}

/**
 * The workspace's live experiments, newest first, a page at a time (keyset on created desc, id):
 * a listing of any size holds at most two pages in memory, and its answer starts after the
 * first page. The next page is read while the caller writes this one, so the database works
 * while Node serialises.
 */
export async function* liveExperimentPages(db: DbOrTrx, workspaceId: number, pageSize = 1000): AsyncGenerator<ExperimentRecord[]> {
  const pageAfter = async (after?: { created: number; id: string }): Promise<ExperimentRecord[]> => {
    const q = db(TABLE).where({ workspace_id: workspaceId }).whereNull('deleted');
    if (after) {
      const { created, id } = after;
      // `created <= c` first: a bound the listing-order index (migration 012) can seek to, so a
      // page reads about a page in order, not the rest of the workspace sorted again.
      q.andWhere('created', '<=', created).andWhere((w) => w.where('created', '<', created).orWhere('id', '>', id));
    }
    const rows = await q
      .orderBy([
        { column: 'created', order: 'desc' },
        { column: 'id', order: 'asc' },
      ])
      .limit(pageSize);
    return rows.map(toRecord);
  };
  let next = pageAfter();
  for (;;) {
    const page = await next;
    if (page.length < pageSize) {
      if (page.length > 0) yield page;
      return;
    }
    const last = page[page.length - 1]!;
    next = pageAfter({ created: last.created, id: last.id });
    // A caller that stops early never awaits it: its failure must not go unhandled.
    next.catch(() => undefined);
    yield page;
  }
}

/** All of them in one query (what the listing's pages add up to; the bench's floor). */
export async function listLiveExperiments(db: DbOrTrx, workspaceId: number): Promise<ExperimentRecord[]> {
  const rows = await db(TABLE)
    .where({ workspace_id: workspaceId })
    .whereNull('deleted')
    .orderBy([
      { column: 'created', order: 'desc' },
      { column: 'id', order: 'asc' },
    ]);
  return rows.map(toRecord);
}

export async function findLiveExperiment(db: DbOrTrx, workspaceId: number, id: string): Promise<ExperimentRecord | undefined> {
  const row = await db(TABLE).where({ id, workspace_id: workspaceId }).whereNull('deleted').first();
  return row ? toRecord(row) : undefined;
}

/** Any experiment by id, soft-deleted or not (for tests and the soft-delete answer). */
export async function findExperimentById(db: DbOrTrx, id: string): Promise<ExperimentRecord | undefined> {
  const row = await db(TABLE).where({ id }).first();
  return row ? toRecord(row) : undefined;
}

/**
 * Writes `changes` to a live experiment of the workspace; with `expect`, only while it is still
 * in that state (compare-and-set, so two concurrent transitions cannot both apply). Returns
 * whether a row changed.
 */
export async function updateLiveExperiment(
  db: DbOrTrx,
  workspaceId: number,
  id: string,
  changes: ExperimentChanges,
  expect?: ExperimentState,
): Promise<boolean> {
  const q = db(TABLE).where({ id, workspace_id: workspaceId }).whereNull('deleted');
  if (expect) {
    q.andWhere('status', expect.status);
    if (expect.archived) q.whereNotNull('archived_at');
    else q.whereNull('archived_at');
  }
  const count = await q.update(toColumns(changes));
  return toNumber(count) > 0;
}
