/** Batch import runs SQL says are unfinished, for the reconciler. */
import { setBatchImportStatus, unfinishedBatchImports } from '../src/db/batch-imports.repo.js';
import { listPartitions } from '../src/db/run-partitions.repo.js';
import { batchImportFinishJobId, batchImportJobId, batchImportPartJobId } from '../src/queue/job-ids.js';
import { partitionLabel } from '../src/runs/partitions.js';
import type { RunSource, UnfinishedRun } from '../src/runs/run-source.js';

export const batchImportsReconcileSource: RunSource = {
  name: 'batch-imports',
  findUnfinished: async (db) => {
    const out: UnfinishedRun[] = [];
    for (const importId of await unfinishedBatchImports(db)) {
      const parts = await listPartitions(db, 'batch-import', importId);
      if (parts.length === 0) {
        out.push({ jobName: 'batch-import', jobId: batchImportJobId(importId), payload: { importId } });
        continue;
      }
      // A partitioned import is carried by its partitions' jobs; the last one done finishes it.
      for (const p of parts.filter((x) => x.status === 'queued' || x.status === 'running')) {
        out.push({ jobName: 'batch-import-part', jobId: batchImportPartJobId(importId, p.idx), payload: { importId, part: p.idx }, label: partitionLabel(p.idx, p.total) });
      }
      if (parts.every((p) => p.status === 'done')) out.push({ jobName: 'batch-import-finish', jobId: batchImportFinishJobId(importId), payload: { importId } });
    }
    return out;
  },
  markFailed: async (db, run, reason) => {
    const { importId } = run.payload as { importId: string };
    await setBatchImportStatus(db, importId, 'failed', { now: Date.now(), error: reason, line: `failed: ${reason} (recorded by the reconciler)` });
  },
};
