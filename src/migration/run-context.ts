/**
 * What the migration runners need from a job: the same narrow context the worker runtime hands
 * every handler (jobs/types.ts JobContext is structurally this), so tests call runners directly.
 */
import type { Config } from '../../config/index.js';
import type { Db } from '../db/knex.js';
import type { Logger } from '../lib/logger.js';
import type { SecretBox } from '../lib/secrets.js';
import type { JobQueues } from '../queue/queues.js';

export interface MigrationRunContext {
  db: Db;
  log: Logger;
  config: Config;
  secrets: SecretBox;
  queues: Pick<JobQueues, 'enqueue'>;
  signal: AbortSignal;
  progress: (value: number | { percent: number; [k: string]: unknown }) => Promise<void>;
  logLine: (line: string) => Promise<void>;
  /** 1-based attempt of this job. */
  attempt: number;
}
