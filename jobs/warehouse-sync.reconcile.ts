/** Warehouse sync runs SQL says are QUEUED or RUNNING, for the reconciler. */
import { finishRun, findRun, listActiveRuns } from '../src/db/sync-runs.repo.js';
import { appendLog, logLine } from '../src/domain/sync-log.js';
import type { ReconcileSource } from './reconcile-sources.js';

export const warehouseSyncReconcileSource: ReconcileSource = {
  name: 'warehouse-sync',
  findUnfinished: async (db) =>
    (await listActiveRuns(db)).map((run) => ({
      jobName: 'warehouse-sync' as const,
      jobId: run.jobId,
      payload: { runId: run.id },
    })),
  markFailed: async (db, run, reason) => {
    const { runId } = run.payload as { runId: string };
    const current = await findRun(db, runId);
    if (!current) return;
    const now = Date.now();
    await finishRun(db, runId, 'FAILED', { error: reason, log: appendLog(current.log, [logLine(now, `failed: ${reason}`)]), now });
  },
};
