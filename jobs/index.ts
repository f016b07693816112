/**
 * The handler of every job name in the catalog. Each area adds its handler here (one line);
 * the worker runtime looks handlers up by job name.
 */
import type { JobName } from '../src/queue/catalog.js';
import { batchImportHandler } from './batch-import.job.js';
import { finishPartitionedImport, runBatchPartition } from './batch-import.partition.js';
import { migrationDayHandler, migrationFinalizeHandler } from './migration.job.js';
import type { JobHandler } from './types.js';
import { warehouseSyncFinishHandler, warehouseSyncHandler, warehouseSyncPartHandler } from './warehouse-sync.job.js';

export const handlers: Partial<{ [N in JobName]: JobHandler<N> }> = {
  'batch-import': batchImportHandler,
  'batch-import-part': (payload, ctx) => runBatchPartition(payload, ctx),
  'batch-import-finish': (payload, ctx) => finishPartitionedImport(payload, ctx),
  'migration-day': migrationDayHandler,
  'migration-finalize': migrationFinalizeHandler,
  'warehouse-sync': warehouseSyncHandler,
  'warehouse-sync-part': warehouseSyncPartHandler,
  'warehouse-sync-finish': warehouseSyncFinishHandler,
};
