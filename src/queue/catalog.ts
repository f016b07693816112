/**
 * The job catalog: every job name with its payload schema, attempts, backoff and timeout.
 * Payloads carry ids only — never credentials, never row data. Rolling deploys: new fields stay
 * optional so jobs enqueued before a deploy still parse, and unknown fields are allowed (and
 * dropped) so an older worker still takes a newer web's jobs — no `.strict()` here.
 */
import { z } from 'zod';

export const QUEUE_NAMES = ['warehouse-sync', 'migration', 'batch-import'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

export const jobCatalog = {
  'warehouse-sync': {
    queue: 'warehouse-sync',
    payload: z.object({ runId: z.string().min(1) }),
    attempts: 5,
    backoffMs: 5_000,
    timeoutMs: 6 * 60 * 60 * 1000,
  },
  /** One partition of a partitioned sync run (a child of the run's flow; any worker takes it). */
  'warehouse-sync-part': {
    queue: 'warehouse-sync',
    payload: z.object({ runId: z.string().min(1), part: z.number().int().min(0) }),
    attempts: 5,
    backoffMs: 5_000,
    timeoutMs: 6 * 60 * 60 * 1000,
  },
  /** The parent of a partitioned sync's flow: runs once every partition job completed. */
  'warehouse-sync-finish': {
    queue: 'warehouse-sync',
    payload: z.object({ runId: z.string().min(1) }),
    attempts: 5,
    backoffMs: 5_000,
    timeoutMs: 10 * 60 * 1000,
  },
  'migration-day': {
    queue: 'migration',
    payload: z.object({ migrationId: z.string().min(1), day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }),
    attempts: 5,
    backoffMs: 10_000,
    timeoutMs: 2 * 60 * 60 * 1000,
  },
  'migration-finalize': {
    queue: 'migration',
    payload: z.object({ migrationId: z.string().min(1) }),
    attempts: 5,
    backoffMs: 10_000,
    timeoutMs: 60 * 60 * 1000,
  },
  'batch-import': {
    queue: 'batch-import',
    payload: z.object({ importId: z.string().min(1) }),
    attempts: 5,
    backoffMs: 5_000,
    timeoutMs: 6 * 60 * 60 * 1000,
  },
  /** One byte range of a large uncompressed NDJSON batch import (a child of the run's flow). */
  'batch-import-part': {
    queue: 'batch-import',
    payload: z.object({ importId: z.string().min(1), part: z.number().int().min(0) }),
    attempts: 5,
    backoffMs: 5_000,
    timeoutMs: 6 * 60 * 60 * 1000,
  },
  /** The parent of a partitioned batch import's flow. */
  'batch-import-finish': {
    queue: 'batch-import',
    payload: z.object({ importId: z.string().min(1) }),
    attempts: 5,
    backoffMs: 5_000,
    timeoutMs: 10 * 60 * 1000,
  },
} as const;

export type JobName = keyof typeof jobCatalog;
export type JobPayload<N extends JobName> = z.infer<(typeof jobCatalog)[N]['payload']>;

export function isJobName(name: string): name is JobName {
  return Object.prototype.hasOwnProperty.call(jobCatalog, name);
}

/**
 * A BullMQ job's name is the catalog name, optionally followed by " · " and whose it is
 * ("warehouse-sync-part · project 3 · import 7 · partition 2 of 9") for the dashboard.
 */
export const LABEL_SEPARATOR = ' · ';

export function jobDisplayName(name: JobName, label?: string): string {
  return label ? `${name}${LABEL_SEPARATOR}${label}` : name;
}

/** The catalog name of a BullMQ job name (with or without a label). */
export function catalogNameOf(jobName: string): string {
  const at = jobName.indexOf(LABEL_SEPARATOR);
  return at === -1 ? jobName : jobName.slice(0, at);
}
