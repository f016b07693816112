/**
 * What a job handler gets: a narrow context, never the BullMQ job itself, so tests can call
 * handlers directly and the transport stays a thin wrapper (jobs/*.job.ts).
 */
import type { Config } from '../config/index.js';
import type { Db } from '../src/db/knex.js';
import type { Logger } from '../src/lib/logger.js';
import type { SecretBox } from '../src/lib/secrets.js';
import type { JobQueues } from '../src/queue/queues.js';
import type { JobName, JobPayload } from '../src/queue/catalog.js';

export interface JobContext {
  db: Db;
  log: Logger;
  config: Config;
  secrets: SecretBox;
  queues: JobQueues;
  /** Aborted on shutdown: checkpoint and return (or throw RetryableError) promptly. */
  signal: AbortSignal;
  /** 0-100 (or an object with a `percent`) — drives the Bull dashboard's progress bar. */
  progress: (value: number | { percent: number; [k: string]: unknown }) => Promise<void>;
  /** One line in the Bull dashboard's job log. */
  logLine: (line: string) => Promise<void>;
  /** 1-based attempt number of this run of the job. */
  attempt: number;
  /** The BullMQ job id. */
  jobId: string;
}

export type JobHandler<N extends JobName> = (payload: JobPayload<N>, ctx: JobContext) => Promise<unknown>;
