/**
 * What every run step gets from the worker runtime: a narrow context, never the BullMQ job
 * itself, so tests call handlers and runners directly and the transport stays a thin wrapper.
 * One definition for every kind (jobs/types.ts and the migration runners use it).
 */
import type { Config } from '../../config/index.js';
import type { Db } from '../db/knex.js';
import type { EventStore } from '../store/event-store.js';
import type { Logger } from '../lib/logger.js';
import type { SecretBox } from '../lib/secrets.js';
import type { JobQueues } from '../queue/queues.js';
import type { Progress, ReportedProgress } from './board-progress.js';
import type { StoreOutageCheck } from '../store/store-outage.js';

export interface RunContext {
  db: Db;
  /** Every read and write of events goes through it (src/store). */
  events: EventStore;
  log: Logger;
  config: Config;
  secrets: SecretBox;
  queues: JobQueues;
  /** Aborted on shutdown: checkpoint and return (or throw RetryableError) promptly. */
  signal: AbortSignal;
  /** 0-100 (or an object with a `percent`) — drives the Bull dashboard's progress bar. */
  progress: (value: Progress) => Promise<void>;
  /** A partition job of a flow: the parent (run) job's progress — all partitions together. */
  parentProgress?: (value: ReportedProgress) => Promise<void>;
  /** One line in the Bull dashboard's job log. */
  logLine: (line: string) => Promise<void>;
  /** Whether a failure is an outage of our own stores (./store-outage.ts): waited out, not counted. */
  storeOutage: StoreOutageCheck;
  /** 1-based attempt number of this run of the job. */
  attempt: number;
  /** The BullMQ job id. */
  jobId: string;
}

/** The migration runners enqueue their next steps but need nothing else of the queues. */
export type MigrationRunContext = Omit<RunContext, 'queues' | 'jobId'> & { queues: Pick<JobQueues, 'enqueue'> };
