/**
 * What the reconciler asks of each run kind: the runs SQL says are queued or running, each with
 * the deterministic job that carries it, and how to record a failure BullMQ decided. Lives here
 * (not in jobs/) so that each kind's source and the list of sources import it one way only.
 */
import type { Db } from '../db/knex.js';
import type { JobName, JobPayload } from '../queue/catalog.js';

export interface UnfinishedRun<N extends JobName = JobName> {
  jobName: N;
  /** The deterministic BullMQ job id the run was (or would have been) enqueued with. */
  jobId: string;
  payload: JobPayload<N>;
  /** Whose job this is, for the dashboard's job name (see jobDisplayName). */
  label?: string;
}

export interface RunSource {
  name: string;
  findUnfinished(db: Db): Promise<UnfinishedRun[]>;
  /**
   * Optional: record in SQL that the run failed. The reconciler calls it when BullMQ holds the
   * run's job as failed for good (a PermanentError, or attempts used up) but SQL still says
   * queued/running — i.e. the handler could not write the failure itself.
   */
  markFailed?(db: Db, run: UnfinishedRun, reason: string): Promise<void>;
}
