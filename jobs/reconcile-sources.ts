/**
 * Runs that SQL says are queued or running, per kind. The reconciler (job platform) re-enqueues
 * any of these whose job Redis no longer has. Each area adds one entry (one line) here.
 */
import type { Db } from '../src/db/knex.js';
import type { JobName, JobPayload } from '../src/queue/catalog.js';

export interface UnfinishedRun<N extends JobName = JobName> {
  jobName: N;
  /** The deterministic BullMQ job id the run was (or would have been) enqueued with. */
  jobId: string;
  payload: JobPayload<N>;
}

export interface ReconcileSource {
  name: string;
  findUnfinished: (db: Db) => Promise<UnfinishedRun[]>;
}

export const reconcileSources: ReconcileSource[] = [];
