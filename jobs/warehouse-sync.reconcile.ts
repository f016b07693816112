/** Warehouse sync runs SQL says are QUEUED or RUNNING, for the reconciler. */
import { finishRun, findRun, listActiveRuns } from '../src/db/sync-runs.repo.js';
import { appendLog, logLine } from '../src/domain/sync-log.js';
import { listPartitions } from '../src/db/run-partitions.repo.js';
import { warehouseSyncFinishJobId, warehouseSyncPartJobId } from '../src/queue/job-ids.js';
import { syncRunLabel } from '../src/queue/job-labels.js';
import { partitionLabel } from '../src/runs/partitions.js';
import type { RunSource, UnfinishedRun } from '../src/runs/run-source.js';

export const warehouseSyncReconcileSource: RunSource = {
  name: 'warehouse-sync',
  findUnfinished: async (db) => {
    const out: UnfinishedRun[] = [];
    for (const run of await listActiveRuns(db)) {
      if (!run.partitions) {
        out.push({ jobName: 'warehouse-sync', jobId: run.jobId, payload: { runId: run.id }, label: syncRunLabel(run) });
        continue;
      }
      // A partitioned run is carried by its partitions' jobs; the last one done finishes the run.
      const parts = await listPartitions(db, 'sync', run.id);
      for (const p of parts.filter((x) => x.status === 'queued' || x.status === 'running')) {
        out.push({ jobName: 'warehouse-sync-part', jobId: warehouseSyncPartJobId(run.id, p.idx), payload: { runId: run.id, part: p.idx }, label: `${syncRunLabel(run)} · ${partitionLabel(p.idx, p.total)}` });
      }
      if (parts.length > 0 && parts.every((p) => p.status === 'done')) {
        out.push({ jobName: 'warehouse-sync-finish', jobId: warehouseSyncFinishJobId(run.id), payload: { runId: run.id }, label: syncRunLabel(run) });
      }
    }
    return out;
  },
  markFailed: async (db, run, reason) => {
    const { runId } = run.payload as { runId: string };
    const current = await findRun(db, runId);
    if (!current) return;
    const now = Date.now();
    await finishRun(db, runId, 'FAILED', { error: reason, log: appendLog(current.log, [logLine(now, `failed: ${reason}`)]), now });
  },
};
