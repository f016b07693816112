/**
 * The `migration-day` job: one day of one migration. What it does is decided by SQL, not by the
 * payload: in the count phase it counts the day, in the load phase it loads it; a day already
 * past that step is a no-op. Afterwards, the day that completes a phase enqueues the next step
 * (deterministic job ids make a race between the last two days harmless).
 */
import { migrationLabel } from '../queue/job-labels.js';
import { dayStatusCounts, findMigration, markFailed, markRunning, appendLog, setDayWorker, updateDay, type MigrationRow } from '../db/migration-runs.repo.js';
import { dropStagedUsers } from '../db/migration-user-props.repo.js';
import { errorMessage } from '../lib/errors.js';
import { removeMigrationFiles } from './archive-files.js';
import { countDay } from './count-day.js';
import { loadDay } from './load-day.js';
import { countedJobId, finalizeJobId } from './migration-job-ids.js';
import type { MigrationRunContext } from '../runs/context.js';
import { endsRun } from '../runs/failure.js';
import { workerId } from '../runs/partitions.js';

export interface DayJobOptions {
  /** This is the job's last attempt (src/runs/failure.ts isFinalAttempt): a failure other than an outage of our stores fails the run (endsRun). */
  finalAttempt: boolean;
}

/** Fails the run (once), dropping its staged profiles and (given the config) its archives. */
export async function failMigration(
  ctx: Pick<MigrationRunContext, 'db' | 'log'> & { config?: Pick<MigrationRunContext['config'], 'MIGRATION_TMP_DIR'> },
  m: MigrationRow,
  message: string,
): Promise<void> {
  const now = Date.now();
  if (await markFailed(ctx.db, m.id, message, now)) {
    await appendLog(ctx.db, m.id, `failed: ${message}`, now);
    ctx.log.warn({ migrationId: m.id, error: message }, 'migration failed');
  }
  await dropStagedUsers(ctx.db, m.id);
  if (ctx.config) removeMigrationFiles(ctx.config.MIGRATION_TMP_DIR, m.id);
}

/** Enqueues the step after the current phase when every day has finished it. */
export async function advanceIfReady(ctx: Pick<MigrationRunContext, 'db' | 'queues'>, migrationId: string): Promise<void> {
  const m = await findMigration(ctx.db, migrationId);
  if (!m || (m.status !== 'queued' && m.status !== 'running')) return;
  const counts = await dayStatusCounts(ctx.db, m.id);
  if (m.phase === 'count' && counts.counted + counts.loading + counts.done === m.daysTotal) {
    await ctx.queues.enqueue('migration-finalize', { migrationId: m.id }, { jobId: countedJobId(m.id), label: migrationLabel(m.projectId, m.id, 'after count') });
  } else if ((m.phase === 'load' && counts.done === m.daysTotal) || m.phase === 'finalize') {
    await ctx.queues.enqueue('migration-finalize', { migrationId: m.id }, { jobId: finalizeJobId(m.id), label: migrationLabel(m.projectId, m.id, 'finalize') });
  }
}

export async function runMigrationDay(
  payload: { migrationId: string; day: string },
  ctx: MigrationRunContext,
  options: DayJobOptions,
): Promise<{ outcome: string }> {
  const m = await findMigration(ctx.db, payload.migrationId);
  if (!m) return { outcome: 'unknown migration' };
  if (m.status !== 'queued' && m.status !== 'running') return { outcome: `migration ${m.status}` };
  await markRunning(ctx.db, m.id, Date.now());
  await setDayWorker(ctx.db, m.id, payload.day, workerId());
  try {
    if (m.phase === 'count') await countDay(ctx, m, payload.day);
    else if (m.phase === 'load' && (await loadDay(ctx, m, payload.day)) === 'stopped') return { outcome: 'stopped: migration failed' };
  } catch (err) {
    if (!ctx.signal.aborted && (await endsRun(err, options.finalAttempt, ctx))) {
      // The day says where the run failed, beside the run's own error.
      await updateDay(ctx.db, m.id, payload.day, { error: errorMessage(err), now: Date.now() });
      await failMigration(ctx, m, `${payload.day}: ${errorMessage(err)}`);
    } else {
      ctx.log.warn({ migrationId: m.id, day: payload.day, attempt: ctx.attempt, err: errorMessage(err) }, 'migration day failed; will retry');
    }
    throw err;
  }
  await advanceIfReady(ctx, m.id);
  return { outcome: m.phase };
}
