/**
 * Migration runs SQL says are unfinished, for the reconciler: per run, the job of its current
 * step — the count or load job of every day not past that phase, or the step after the phase
 * once every day is through it. All ids are deterministic (src/migration/migration-job-ids.ts).
 */
import { findMigration, listDays, unfinishedMigrations } from '../src/db/migration-runs.repo.js';
import { failMigration } from '../src/migration/migration-day.runner.js';
import { countedJobId, countJobId, finalizeJobId, loadJobId } from '../src/migration/migration-job-ids.js';
import { silentLogger } from '../src/lib/logger.js';
import { migrationLabel } from '../src/queue/job-labels.js';
import type { RunSource, UnfinishedRun } from '../src/runs/run-source.js';

export const migrationsReconcileSource: RunSource = {
  name: 'migrations',
  findUnfinished: async (db) => {
    const out: UnfinishedRun[] = [];
    for (const m of await unfinishedMigrations(db)) {
      const days = await listDays(db, m.id);
      const step = (jobId: string): UnfinishedRun => ({ jobName: 'migration-finalize', jobId, payload: { migrationId: m.id }, label: migrationLabel(m.projectId, m.id, m.phase) });
      const day = (jobId: string, d: string): UnfinishedRun => ({ jobName: 'migration-day', jobId, payload: { migrationId: m.id, day: d }, label: migrationLabel(m.projectId, m.id, `${m.phase} ${d}`) });
      if (m.phase === 'count') {
        const pending = days.filter((d) => d.status === 'queued' || d.status === 'counting');
        if (pending.length > 0) out.push(...pending.map((d) => day(countJobId(m.id, d.day), d.day)));
        else out.push(step(countedJobId(m.id)));
      } else if (m.phase === 'load') {
        const pending = days.filter((d) => d.status !== 'done');
        if (pending.length > 0) out.push(...pending.map((d) => day(loadJobId(m.id, d.day), d.day)));
        else out.push(step(finalizeJobId(m.id)));
      } else if (m.phase === 'finalize') {
        out.push(step(finalizeJobId(m.id)));
      }
    }
    return out;
  },
  markFailed: async (db, run, reason) => {
    const { migrationId } = run.payload as { migrationId: string };
    const m = await findMigration(db, migrationId);
    // No config here: the run's archives stay in MIGRATION_TMP_DIR/<id> (safe to delete).
    if (m) await failMigration({ db, log: silentLogger }, m, reason);
  },
};
