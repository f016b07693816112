/**
 * The `migration-finalize` job: the steps between and after the per-day passes.
 *
 * After the count pass (every day counted): the free-migration limit is checked against the exact
 * count — over it, the run fails having loaded nothing; a dry run ends here with its count; any
 * other run moves to the load pass and enqueues one load job per day.
 *
 * After the load pass (every day loaded): the staged user properties are applied as one `$set`
 * per user (with `$time` = that user's latest event, so the profile store's latest-wins keeps a
 * newer value set by anything else), a page at a time with the cursor committed in the same
 * transaction, then the run is marked succeeded.
 */
import { migrationLabel } from '../queue/job-labels.js';
import {
  appendLog,
  dayStatusCounts,
  findMigration,
  listDays,
  setProfilesProgress,
  totalsOf,
  transitionPhase,
  updateDay,
  type MigrationRow,
} from '../db/migration-runs.repo.js';
import { countStagedUsers, dropStagedUsers, pageStagedUsers } from '../db/migration-user-props.repo.js';
import { applyProfileUpdates } from '../ingest/profiles.ingest.js';
import { RetryableError } from '../lib/errors.js';
import { removeMigrationFiles } from './archive-files.js';
import { failMigration } from './migration-day.runner.js';
import { finalizeJobId, loadJobId } from './migration-job-ids.js';
import type { MigrationRunContext } from '../runs/context.js';
import { endsRun } from '../runs/failure.js';

const PROFILE_PAGE = 1000;

async function note(ctx: MigrationRunContext, m: MigrationRow, line: string): Promise<void> {
  await ctx.logLine(line);
  await appendLog(ctx.db, m.id, line, Date.now());
}

async function afterCount(ctx: MigrationRunContext, m: MigrationRow): Promise<string> {
  const counts = await dayStatusCounts(ctx.db, m.id);
  if (counts.counted + counts.loading + counts.done < m.daysTotal) return 'waiting for days to be counted';
  const total = (await totalsOf(ctx.db, m.id)).eventsCountedSoFar;
  const max = ctx.config.MIGRATION_MAX_EVENTS;
  const now = Date.now();
  // A dry run answers the question whatever the answer is (and says whether a real run would go ahead).
  if (m.dryRun) {
    if (await transitionPhase(ctx.db, m.id, 'count', 'done', { status: 'succeeded', eventsCounted: total, now })) {
      const verdict = total > max ? `over the free-migration limit of ${max}: a real run would be refused` : `within the free-migration limit of ${max}`;
      await note(ctx, m, `dry run: ${total} events in range (${verdict}); nothing loaded`);
      removeMigrationFiles(ctx.config.MIGRATION_TMP_DIR, m.id);
    }
    return 'dry run counted';
  }
  if (total > max) {
    const error =
      `the source holds ${total.toLocaleString('en-US')} events between ${m.startDate} and ${m.endDate}, over the ` +
      `free-migration limit of ${max.toLocaleString('en-US')}; nothing was loaded. Migrate a shorter range (a dry run shows the count).`;
    if (await transitionPhase(ctx.db, m.id, 'count', 'done', { status: 'failed', eventsCounted: total, error, now })) {
      await note(ctx, m, `refused: ${error}`);
      removeMigrationFiles(ctx.config.MIGRATION_TMP_DIR, m.id);
    }
    return 'over the limit';
  }
  if (await transitionPhase(ctx.db, m.id, 'count', 'load', { eventsCounted: total, now })) {
    await note(ctx, m, `counted ${total} events; loading`);
  }
  // Days without records have nothing to load; the rest get a load job each.
  const days = await listDays(ctx.db, m.id);
  let pending = 0;
  for (const d of days) {
    if (d.status === 'done') continue;
    if (d.status === 'counted' && (d.eventsCounted ?? 0) === 0) {
      await updateDay(ctx.db, m.id, d.day, { status: 'done', now: Date.now() });
      continue;
    }
    pending += 1;
    await ctx.queues.enqueue('migration-day', { migrationId: m.id, day: d.day }, { jobId: loadJobId(m.id, d.day), label: migrationLabel(m.projectId, m.id, `load ${d.day}`) });
  }
  if (pending === 0) await ctx.queues.enqueue('migration-finalize', { migrationId: m.id }, { jobId: finalizeJobId(m.id), label: migrationLabel(m.projectId, m.id, 'finalize') });
  return `loading ${pending} day(s)`;
}

async function afterLoad(ctx: MigrationRunContext, m: MigrationRow): Promise<string> {
  if (m.phase === 'load') {
    const counts = await dayStatusCounts(ctx.db, m.id);
    if (counts.done < m.daysTotal) return 'waiting for days to be loaded';
    await transitionPhase(ctx.db, m.id, 'load', 'finalize', { now: Date.now() });
  }
  const staged = await countStagedUsers(ctx.db, m.id);
  let cursor = m.profilesCursor;
  let applied = m.profilesSet;
  for (;;) {
    if (ctx.signal.aborted) throw new RetryableError('interrupted by shutdown; profiles resume from their cursor');
    const page = await pageStagedUsers(ctx.db, m.id, cursor, PROFILE_PAGE);
    if (page.length === 0) break;
    const updates = page.map((u) => ({ $distinct_id: u.distinctId, $set: JSON.parse(u.properties) as Record<string, unknown>, $time: u.time }));
    const last = page[page.length - 1]!.distinctId;
    const from = cursor;
    const n = await ctx.db.transaction(async (trx) => {
      const result = await applyProfileUpdates(trx, m.projectId, updates, { now: Date.now() });
      if (!(await setProfilesProgress(trx, m.id, from, last, result.applied, Date.now()))) {
        throw new RetryableError('profiles were advanced by another copy of this job; this attempt stops');
      }
      return result.applied;
    });
    cursor = last;
    applied += n;
    await ctx.progress({ percent: staged > 0 ? Math.min(100, Math.round((applied / staged) * 100)) : 100, profiles_set: applied });
  }
  const totals = await totalsOf(ctx.db, m.id);
  if (await transitionPhase(ctx.db, m.id, 'finalize', 'done', { status: 'succeeded', now: Date.now() })) {
    await note(ctx, m, `done: ${totals.eventsLoaded} events loaded (${totals.eventsDeduplicated} already present, ${totals.eventsRejected} rejected), ${applied} profiles set`);
  }
  await dropStagedUsers(ctx.db, m.id);
  removeMigrationFiles(ctx.config.MIGRATION_TMP_DIR, m.id);
  return 'succeeded';
}

export async function runMigrationFinalize(
  payload: { migrationId: string },
  ctx: MigrationRunContext,
  options: { finalAttempt: boolean },
): Promise<{ outcome: string }> {
  const m = await findMigration(ctx.db, payload.migrationId);
  if (!m) return { outcome: 'unknown migration' };
  if (m.status !== 'queued' && m.status !== 'running') return { outcome: `migration ${m.status}` };
  try {
    if (m.phase === 'count') return { outcome: await afterCount(ctx, m) };
    if (m.phase === 'load' || m.phase === 'finalize') return { outcome: await afterLoad(ctx, m) };
    return { outcome: m.phase };
  } catch (err) {
    if (!ctx.signal.aborted && (await endsRun(err, options.finalAttempt, ctx))) {
      await failMigration(ctx, m, `finalizing: ${err instanceof Error ? err.message : String(err)}`);
    }
    throw err;
  }
}
