/**
 * The public form of a migration run, shared by `GET /migrate/migrations/{id}` and the app API.
 * Never includes the credentials or their hash.
 */
import type { DbOrTrx } from '../db/knex.js';
import { listDays, totalsOf, type DayRow, type MigrationRow } from '../db/migration-runs.repo.js';
import { runWorkersOf } from '../db/run-workers.repo.js';
import { isoTimeOrNull } from '../domain/iso-time.js';

function dayView(d: DayRow) {
  return {
    day: d.day,
    status: d.status,
    windows: d.windows?.map((w) => ({ window: w.key, events: w.events, data: w.kind === 'archive' })) ?? null,
    events_counted: d.eventsCounted,
    events_read: d.eventsRead,
    events_loaded: d.eventsLoaded,
    events_deduplicated: d.eventsDeduplicated,
    events_rejected: d.eventsRejected,
    rejections: d.rejections,
    error: d.error,
    worker: d.worker,
  };
}

export async function migrationView(db: DbOrTrx, m: MigrationRow, options: { days?: boolean } = {}) {
  const t = await totalsOf(db, m.id);
  const days = await listDays(db, m.id);
  const workers = (await runWorkersOf(db, 'migration', [m.id])).get(m.id) ?? [];
  const view = {
    migration_id: m.id,
    project_id: m.projectId,
    source_tool: m.sourceTool,
    source_region: m.sourceRegion,
    status: m.status,
    phase: m.phase,
    start_date: m.startDate,
    end_date: m.endDate,
    dry_run: m.dryRun,
    days_total: m.daysTotal,
    days_counted: t.daysCounted,
    days_done: t.daysDone,
    /** Records in the export: exact once every day is counted (null before). */
    events_in_source: m.eventsCounted,
    events_counted_so_far: t.eventsCountedSoFar,
    dry_run_count: m.dryRun ? m.eventsCounted : null,
    events_read: t.eventsRead,
    events_loaded: t.eventsLoaded,
    events_deduplicated: t.eventsDeduplicated,
    events_rejected: t.eventsRejected,
    profiles_set: m.profilesSet,
    /** Days are a migration's partitions: each its own job that any worker takes. */
    partitions: { total: m.daysTotal, done: t.daysDone },
    /** Every worker that took a day (a day taken again after a crash names both). */
    workers,
    error: m.error,
    log: m.log,
    created_at: isoTimeOrNull(m.createdAt),
    started_at: isoTimeOrNull(m.startedAt),
    finished_at: isoTimeOrNull(m.finishedAt),
  };
  if (!options.days) return view;
  return { ...view, days: days.map(dayView) };
}
