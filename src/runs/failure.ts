/**
 * Retry classification, once for every run kind: by error types, never by message text (a
 * message that merely contains "lock" or "block" must not change the verdict).
 *
 * - our own types decide: PermanentError → permanent, RetryableError → retryable;
 * - errors that carry a `retryable` verdict keep it: connectors translate their driver's codes
 *   (SQLSTATE, SQLite, network; src/lib/error-codes.ts) into WarehouseError(retryable) at the
 *   edge, where it is known that the code came from the source and not from our own database;
 * - anything else → retryable: an unknown error (our own database restarting, a missing table
 *   that the next release's migration adds) gets the job's remaining attempts, and the final
 *   attempt fails the run.
 */
import type { FailureKind } from '../lib/error-codes.js';
import { PermanentError, RetryableError } from '../lib/errors.js';
import { jobCatalog, type JobName } from '../queue/catalog.js';
import type { StoreOutageCheck } from '../store/store-outage.js';

export type { FailureKind };

/** The kind of an error thrown by a run step (see the file comment for the order of rules). */
export function classifyError(err: unknown): FailureKind {
  if (err instanceof PermanentError) return 'permanent';
  if (err instanceof RetryableError) return 'retryable';
  const verdict = (err as { retryable?: unknown } | null)?.retryable;
  if (typeof verdict === 'boolean') return verdict ? 'retryable' : 'permanent';
  return 'retryable';
}

/** Whether this attempt of a job is its last (the catalog's attempts): failures are then final. */
export function isFinalAttempt(jobName: JobName, attempt: number): boolean {
  return attempt >= jobCatalog[jobName].attempts;
}

/**
 * Whether a failed attempt ends its run: a permanent error, or the last attempt failing for any
 * reason but an outage of our own stores (those are waited out and never counted; ./store-outage.ts).
 */
export async function endsRun(err: unknown, finalAttempt: boolean, ctx: { storeOutage: StoreOutageCheck }): Promise<boolean> {
  if (classifyError(err) === 'permanent') return true;
  return finalAttempt && !(await ctx.storeOutage(err));
}

/**
 * The failed reasons BullMQ itself writes when a job lost its worker too often (its stalled
 * check, its started-attempts limit): infrastructure, not a handler's verdict. Compared whole,
 * as the fixed codes they are — not searched for words.
 */
export const BULLMQ_INFRASTRUCTURE_REASONS: ReadonlySet<string> = new Set([
  'job stalled more than allowable limit',
  'job started more than allowable limit',
]);

export function isInfrastructureFailure(failedReason: string | undefined): boolean {
  return failedReason !== undefined && BULLMQ_INFRASTRUCTURE_REASONS.has(failedReason.trim());
}

/**
 * Why a run step's signal was aborted, for its run log: the worker shutting down, a lost lock
 * (Redis lost the job), the catalog's timeout — the runtime's abort reasons say which.
 */
export function interruptionCause(signal: AbortSignal): string {
  const reason = signal.reason as unknown;
  // A bare abort() gives DOMException's generic "This operation was aborted".
  return reason instanceof Error && reason.name !== 'AbortError' ? reason.message : 'shutdown';
}

/** The longest wait between two tries after an outage, as a multiple of the first. */
const MAX_OUTAGE_WAIT_FACTOR = 12;

/**
 * How long a job waits before trying again after its `waits`-th outage in a row: the first wait,
 * doubling, at most 12× the first.
 */
export function outageWaitMs(firstMs: number, waits: number): number {
  return Math.min(firstMs * 2 ** Math.min(Math.max(0, waits), 10), firstMs * MAX_OUTAGE_WAIT_FACTOR);
}
