/**
 * Migration runs (`migrations`) and their per-day rows (`migration_days`): the system of record
 * of the migration service. Workers write status, checkpoints and counts here; the API and the
 * reconciler read them. Parent totals are sums over the day rows, so concurrent day jobs never
 * contend on the parent row.
 */
import { dialect, parseJson, toJson, toNumber, type DbOrTrx } from './knex.js';
import { appendBoundedLog } from './run-log.repo.js';
import { recordRunWorker } from './run-workers.repo.js';

export type MigrationStatus = 'queued' | 'running' | 'succeeded' | 'failed';
export type MigrationPhase = 'count' | 'load' | 'finalize' | 'done';
export type DayStatus = 'queued' | 'counting' | 'counted' | 'loading' | 'done';

export interface MigrationRow {
  id: string;
  projectId: number;
  sourceTool: string;
  sourceKeyHash: string;
  credentials: string;
  sourceRegion: 'US' | 'EU';
  startDate: string;
  endDate: string;
  dryRun: boolean;
  status: MigrationStatus;
  phase: MigrationPhase;
  daysTotal: number;
  eventsCounted: number | null;
  profilesSet: number;
  profilesCursor: string | null;
  error: string | null;
  log: string[];
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

/** One export window of a day and what the count pass found in it. */
export interface DayWindow {
  /** 'day', or the hour '00'…'23' when the day had to be split. */
  key: string;
  kind: 'archive' | 'no-data';
  events: number;
}

/** Where loading a day stopped: committed with the events it covers, in one transaction. */
export interface DayCheckpoint {
  /** Windows fully loaded, by key. */
  windowsDone: string[];
  /** Archive entries fully loaded in the current window. */
  entriesDone: string[];
  /** The entry being loaded and how many of its records are committed. */
  entry?: string;
  line?: number;
}

export interface Rejection {
  entry: string;
  line: number;
  message: string;
}

export interface DayRow {
  migrationId: string;
  day: string;
  status: DayStatus;
  windows: DayWindow[] | null;
  eventsCounted: number | null;
  checkpoint: DayCheckpoint | null;
  /** Committed batches so far (fencing between two copies of one day job). */
  seq: number;
  eventsRead: number;
  eventsLoaded: number;
  eventsDeduplicated: number;
  eventsRejected: number;
  rejections: Rejection[];
  error: string | null;
  updatedAt: number;
  /** "host:pid" of the worker that last took this day's job. */
  worker: string | null;
}

export interface MigrationTotals {
  daysCounted: number;
  daysDone: number;
  eventsCountedSoFar: number;
  eventsRead: number;
  eventsLoaded: number;
  eventsDeduplicated: number;
  eventsRejected: number;
}

/** Lines kept in a run's log; the oldest are dropped first. */
export const LOG_LIMIT = 100;
/** Rejected records kept per day as a sample (the count is exact). */
export const REJECTION_SAMPLE = 20;

function toMigration(r: Record<string, unknown>): MigrationRow {
  return {
    id: r.id as string,
    projectId: toNumber(r.project_id),
    sourceTool: r.source_tool as string,
    sourceKeyHash: r.source_key_hash as string,
    credentials: r.credentials as string,
    sourceRegion: r.source_region as 'US' | 'EU',
    startDate: r.start_date as string,
    endDate: r.end_date as string,
    dryRun: Boolean(r.dry_run),
    status: r.status as MigrationStatus,
    phase: r.phase as MigrationPhase,
    daysTotal: toNumber(r.days_total),
    eventsCounted: r.events_counted === null ? null : toNumber(r.events_counted),
    profilesSet: toNumber(r.profiles_set),
    profilesCursor: (r.profiles_cursor as string | null) ?? null,
    error: (r.error as string | null) ?? null,
    log: parseJson<string[]>(r.log) ?? [],
    createdAt: toNumber(r.created_at),
    startedAt: r.started_at === null ? null : toNumber(r.started_at),
    finishedAt: r.finished_at === null ? null : toNumber(r.finished_at),
  };
}

function toDay(r: Record<string, unknown>): DayRow {
  return {
    migrationId: r.migration_id as string,
    day: r.day as string,
    status: r.status as DayStatus,
    windows: parseJson<DayWindow[] | null>(r.windows) ?? null,
    eventsCounted: r.events_counted === null ? null : toNumber(r.events_counted),
    checkpoint: parseJson<DayCheckpoint | null>(r.checkpoint) ?? null,
    seq: toNumber(r.seq),
    eventsRead: toNumber(r.events_read),
    eventsLoaded: toNumber(r.events_loaded),
    eventsDeduplicated: toNumber(r.events_deduplicated),
    eventsRejected: toNumber(r.events_rejected),
    rejections: parseJson<Rejection[]>(r.rejections) ?? [],
    error: (r.error as string | null) ?? null,
    updatedAt: toNumber(r.updated_at),
    worker: (r.worker as string | null | undefined) ?? null,
  };
}

/** Records which worker took a day's job (days are a migration's partitions). */
export async function setDayWorker(db: DbOrTrx, migrationId: string, day: string, worker: string): Promise<void> {
  await db('migration_days').where({ migration_id: migrationId, day }).update({ worker });
  await recordRunWorker(db, 'migration', migrationId, worker);
}

export interface NewMigration {
  id: string;
  projectId: number;
  sourceTool: string;
  sourceKeyHash: string;
  credentials: string;
  sourceRegion: 'US' | 'EU';
  startDate: string;
  endDate: string;
  dryRun: boolean;
  days: string[];
  now: number;
}

export async function insertMigration(db: DbOrTrx, m: NewMigration): Promise<void> {
  await db('migrations').insert({
    id: m.id,
    project_id: m.projectId,
    source_tool: m.sourceTool,
    source_key_hash: m.sourceKeyHash,
    credentials: m.credentials,
    source_region: m.sourceRegion,
    start_date: m.startDate,
    end_date: m.endDate,
    dry_run: m.dryRun,
    status: 'queued',
    phase: 'count',
    days_total: m.days.length,
    log: toJson([]),
    created_at: m.now,
    updated_at: m.now,
  });
  const rows = m.days.map((day) => ({
    migration_id: m.id,
    day,
    status: 'queued',
    rejections: toJson([]),
    updated_at: m.now,
  }));
  for (let i = 0; i < rows.length; i += 100) await db('migration_days').insert(rows.slice(i, i + 100));
}

export async function findMigration(db: DbOrTrx, id: string): Promise<MigrationRow | undefined> {
  const row = await db('migrations').where({ id }).first();
  return row ? toMigration(row) : undefined;
}

/** The project's queued or running migration, if any (the oldest). */
export async function findActiveMigration(db: DbOrTrx, projectId: number): Promise<MigrationRow | undefined> {
  const row = await db('migrations').where({ project_id: projectId }).whereIn('status', ['queued', 'running']).orderBy('created_at').first();
  return row ? toMigration(row) : undefined;
}

/**
 * Serialises migration starts of one project until the transaction ends (Postgres advisory lock;
 * SQLite has one writer, and its transactions here run one at a time), so "at most one active
 * migration per project" holds under concurrent posts.
 */
export async function lockProjectMigrations(db: DbOrTrx, projectId: number): Promise<void> {
  if (dialect(db) === 'postgres') await db.raw('SELECT pg_advisory_xact_lock(?::int, ?::int)', [MIGRATION_LOCK_SPACE, projectId & 0x7fffffff]);
}
const MIGRATION_LOCK_SPACE = 0x6d696772;

export async function listMigrations(db: DbOrTrx, projectId: number, limit: number): Promise<MigrationRow[]> {
  const rows = await db('migrations').where({ project_id: projectId }).orderBy('created_at', 'desc').orderBy('id').limit(limit);
  return rows.map(toMigration);
}

/** Runs SQL says are not finished (the reconciler's input). */
export async function unfinishedMigrations(db: DbOrTrx): Promise<MigrationRow[]> {
  const rows = await db('migrations').whereIn('status', ['queued', 'running']).orderBy('created_at');
  return rows.map(toMigration);
}

export async function listDays(db: DbOrTrx, migrationId: string): Promise<DayRow[]> {
  const rows = await db('migration_days').where({ migration_id: migrationId }).orderBy('day');
  return rows.map(toDay);
}

export async function findDay(db: DbOrTrx, migrationId: string, day: string): Promise<DayRow | undefined> {
  const row = await db('migration_days').where({ migration_id: migrationId, day }).first();
  return row ? toDay(row) : undefined;
}

export async function totalsOf(db: DbOrTrx, migrationId: string): Promise<MigrationTotals> {
  const row = await db('migration_days')
    .where({ migration_id: migrationId })
    .select(
      db.raw("SUM(CASE WHEN status IN ('counted', 'loading', 'done') THEN 1 ELSE 0 END) AS days_counted"),
      db.raw("SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END) AS days_done"),
      db.raw('SUM(COALESCE(events_counted, 0)) AS events_counted'),
      db.raw('SUM(events_read) AS events_read'),
      db.raw('SUM(events_loaded) AS events_loaded'),
      db.raw('SUM(events_deduplicated) AS events_deduplicated'),
      db.raw('SUM(events_rejected) AS events_rejected'),
    )
    .first();
  const n = (v: unknown) => toNumber(v ?? 0) || 0;
  return {
    daysCounted: n(row?.days_counted),
    daysDone: n(row?.days_done),
    eventsCountedSoFar: n(row?.events_counted),
    eventsRead: n(row?.events_read),
    eventsLoaded: n(row?.events_loaded),
    eventsDeduplicated: n(row?.events_deduplicated),
    eventsRejected: n(row?.events_rejected),
  };
}

/** queued → running, once. */
export async function markRunning(db: DbOrTrx, id: string, now: number): Promise<void> {
  await db('migrations').where({ id, status: 'queued' }).update({ status: 'running', started_at: now, updated_at: now });
}

/**
 * Moves the run from one phase to the next; true for exactly one caller when several race
 * (a conditional update), so the work of a transition is done once.
 */
export async function transitionPhase(
  db: DbOrTrx,
  id: string,
  from: MigrationPhase,
  to: MigrationPhase,
  patch: { status?: MigrationStatus; eventsCounted?: number; error?: string | null; now: number },
): Promise<boolean> {
  const update: Record<string, unknown> = { phase: to, updated_at: patch.now };
  if (patch.status) update.status = patch.status;
  if (patch.eventsCounted !== undefined) update.events_counted = patch.eventsCounted;
  if (patch.error !== undefined) update.error = patch.error;
  if (patch.status === 'succeeded' || patch.status === 'failed') update.finished_at = patch.now;
  const n = await db('migrations').where({ id, phase: from }).whereIn('status', ['queued', 'running']).update(update);
  return n > 0;
}

/** Fails an unfinished run with a message; false when it had already finished. */
export async function markFailed(db: DbOrTrx, id: string, message: string, now: number): Promise<boolean> {
  const n = await db('migrations')
    .where({ id })
    .whereIn('status', ['queued', 'running'])
    .update({ status: 'failed', error: message.slice(0, 2000), finished_at: now, updated_at: now });
  return n > 0;
}

export async function appendLog(db: DbOrTrx, id: string, line: string, now: number): Promise<void> {
  await appendBoundedLog(db, 'migrations', id, line, now, LOG_LIMIT);
}

/**
 * Moves the profile cursor from `from` to `to`, adding to the count; false when the cursor was
 * not at `from` (another copy of the job got there first): the caller must roll back.
 */
export async function setProfilesProgress(db: DbOrTrx, id: string, from: string | null, to: string, added: number, now: number): Promise<boolean> {
  const q = db('migrations').where({ id });
  if (from === null) q.whereNull('profiles_cursor');
  else q.andWhere('profiles_cursor', from);
  const n = await q.update({ profiles_cursor: to, profiles_set: db.raw('?? + ?', ['profiles_set', added]), updated_at: now });
  return n > 0;
}

export async function updateDay(
  db: DbOrTrx,
  migrationId: string,
  day: string,
  patch: {
    status?: DayStatus;
    windows?: DayWindow[];
    eventsCounted?: number;
    checkpoint?: DayCheckpoint | null;
    error?: string | null;
    now: number;
  },
): Promise<void> {
  const update: Record<string, unknown> = { updated_at: patch.now };
  if (patch.status) update.status = patch.status;
  if (patch.windows) update.windows = toJson(patch.windows);
  if (patch.eventsCounted !== undefined) update.events_counted = patch.eventsCounted;
  if (patch.checkpoint !== undefined) update.checkpoint = patch.checkpoint === null ? null : toJson(patch.checkpoint);
  if (patch.error !== undefined) update.error = patch.error;
  await db('migration_days').where({ migration_id: migrationId, day }).update(update);
}

export interface BatchProgress {
  /** The day's `seq` this batch continues from; another value means the batch was superseded. */
  seq: number;
  checkpoint: DayCheckpoint;
  read: number;
  loaded: number;
  deduplicated: number;
  rejected: number;
  /** New rejection samples; kept up to REJECTION_SAMPLE per day. */
  rejections: Rejection[];
  now: number;
}

/**
 * Adds one committed batch to a day, inside the batch's transaction. False when the day moved on
 * since `p.seq` (another copy of the job committed first): the caller must roll back.
 */
export async function recordBatch(db: DbOrTrx, migrationId: string, day: string, p: BatchProgress): Promise<boolean> {
  const update: Record<string, unknown> = {
    seq: p.seq + 1,
    checkpoint: toJson(p.checkpoint),
    events_read: db.raw('?? + ?', ['events_read', p.read]),
    events_loaded: db.raw('?? + ?', ['events_loaded', p.loaded]),
    events_deduplicated: db.raw('?? + ?', ['events_deduplicated', p.deduplicated]),
    events_rejected: db.raw('?? + ?', ['events_rejected', p.rejected]),
    updated_at: p.now,
  };
  if (p.rejections.length > 0) {
    const row = await db('migration_days').where({ migration_id: migrationId, day }).select('rejections').first();
    const kept = parseJson<Rejection[]>(row?.rejections) ?? [];
    if (kept.length < REJECTION_SAMPLE) update.rejections = toJson([...kept, ...p.rejections].slice(0, REJECTION_SAMPLE));
  }
  const n = await db('migration_days').where({ migration_id: migrationId, day, seq: p.seq }).update(update);
  return n > 0;
}

/** How many days of the run are in each status. */
export async function dayStatusCounts(db: DbOrTrx, migrationId: string): Promise<Record<DayStatus, number>> {
  const rows = (await db('migration_days').where({ migration_id: migrationId }).select('status').count({ n: '*' }).groupBy('status')) as {
    status: string;
    n: number | string;
  }[];
  const out: Record<DayStatus, number> = { queued: 0, counting: 0, counted: 0, loading: 0, done: 0 };
  for (const r of rows) out[r.status as DayStatus] = toNumber(r.n);
  return out;
}
