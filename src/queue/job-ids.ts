/**
 * Deterministic BullMQ job ids. The same run always maps to the same id, so enqueueing twice
 * (a retried request, two reconcilers) is a no-op while the job exists. BullMQ refuses ':' in ids.
 */
export function batchImportJobId(importId: string): string {
  return `batch-import-${importId}`;
}

/** The job of a warehouse sync run (manual or scheduled): one run, one job id. */
export function warehouseSyncJobId(runId: string): string {
  return `warehouse-sync-${runId}`;
}
