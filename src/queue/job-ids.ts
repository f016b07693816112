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

/** One partition of a partitioned sync run (a child of the run's flow). */
export function warehouseSyncPartJobId(runId: string, part: number): string {
  return `warehouse-sync-${runId}-part-${part}`;
}

/** The parent job of a partitioned sync run's flow. */
export function warehouseSyncFinishJobId(runId: string): string {
  return `warehouse-sync-${runId}-finish`;
}

/** One byte range of a partitioned batch import. */
export function batchImportPartJobId(importId: string, part: number): string {
  return `batch-import-${importId}-part-${part}`;
}

/** The parent job of a partitioned batch import's flow. */
export function batchImportFinishJobId(importId: string): string {
  return `batch-import-${importId}-finish`;
}
