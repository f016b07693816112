/**
 * The job catalog: every job name with its payload schema, attempts, backoff and timeout.
 * Payloads carry ids only — never credentials, never row data. New fields stay optional so jobs
 * enqueued before a deploy still parse.
 */
import { z } from 'zod';

export const QUEUE_NAMES = ['warehouse-sync', 'migration', 'batch-import'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

export const jobCatalog = {
  'warehouse-sync': {
    queue: 'warehouse-sync',
    payload: z.object({ runId: z.string().min(1) }).strict(),
    attempts: 5,
    backoffMs: 5_000,
    timeoutMs: 6 * 60 * 60 * 1000,
  },
  'migration-day': {
    queue: 'migration',
    payload: z.object({ migrationId: z.string().min(1), day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }).strict(),
    attempts: 5,
    backoffMs: 10_000,
    timeoutMs: 2 * 60 * 60 * 1000,
  },
  'migration-finalize': {
    queue: 'migration',
    payload: z.object({ migrationId: z.string().min(1) }).strict(),
    attempts: 5,
    backoffMs: 10_000,
    timeoutMs: 60 * 60 * 1000,
  },
  'batch-import': {
    queue: 'batch-import',
    payload: z.object({ importId: z.string().min(1) }).strict(),
    attempts: 5,
    backoffMs: 5_000,
    timeoutMs: 6 * 60 * 60 * 1000,
  },
} as const;

export type JobName = keyof typeof jobCatalog;
export type JobPayload<N extends JobName> = z.infer<(typeof jobCatalog)[N]['payload']>;

export function isJobName(name: string): name is JobName {
  return Object.prototype.hasOwnProperty.call(jobCatalog, name);
}
