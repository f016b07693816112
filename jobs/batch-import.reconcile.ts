/** Batch import runs SQL says are unfinished, for the reconciler. */
import { setBatchImportStatus, unfinishedBatchImports } from '../src/db/batch-imports.repo.js';
import { batchImportJobId } from '../src/queue/job-ids.js';
import type { ReconcileSource } from './reconcile-sources.js';

export const batchImportsReconcileSource: ReconcileSource = {
  name: 'batch-imports',
  findUnfinished: async (db) =>
    (await unfinishedBatchImports(db)).map((importId) => ({
      jobName: 'batch-import' as const,
      jobId: batchImportJobId(importId),
      payload: { importId },
    })),
  markFailed: async (db, run, reason) => {
    const { importId } = run.payload as { importId: string };
    await setBatchImportStatus(db, importId, 'failed', { now: Date.now(), error: reason, line: `failed: ${reason} (recorded by the reconciler)` });
  },
};
