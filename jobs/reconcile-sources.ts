/**
 * Runs that SQL says are queued or running, per kind. The reconciler (job platform) re-enqueues
 * any of these whose job Redis no longer has. Each area adds one entry (one line) here.
 */
import type { Db } from '../src/db/knex.js';
import type { JobName, JobPayload } from '../src/queue/catalog.js';
import { batchImportsReconcileSource } from './batch-import.reconcile.js';
import { migrationsReconcileSource } from './migration.reconcile.js';
import { warehouseSyncReconcileSource } from './warehouse-sync.reconcile.js';

export interface UnfinishedRun<N extends JobName = JobName> {
  jobName: N;
  /** The deterministic BullMQ job id the run was (or would have been) enqueued with. */
  jobId: string;
  payload: JobPayload<N>;
}

export interface ReconcileSource {
  name: string;
  findUnfinished: (db: Db) => Promise<UnfinishedRun[]>;
  /**
   * Optional: record in SQL that the run failed. The reconciler calls it when BullMQ holds the
   * run's job as failed for good (a PermanentError, or attempts used up) but SQL still says
   * queued/running — i.e. the handler could not write the failure itself.
   */
  markFailed?: (db: Db, run: UnfinishedRun, reason: string) => Promise<void>;
}

export const reconcileSources: ReconcileSource[] = [
  batchImportsReconcileSource,
  migrationsReconcileSource,
  warehouseSyncReconcileSource,
];
