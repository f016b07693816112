/**
 * BullMQ transport for warehouse syncs; every payload carries ids only, the rest is read from SQL.
 * `warehouse-sync` runs (or plans) a run; `warehouse-sync-part` is one partition of a large run;
 * `warehouse-sync-finish` is the parent of a partitioned run's flow.
 */
import { runWarehouseSync } from './warehouse-sync.handler.js';
import { finishPartitionedRun, runSyncPartition } from './warehouse-sync.partition.js';
import type { JobHandler } from './types.js';

export const warehouseSyncHandler: JobHandler<'warehouse-sync'> = ({ runId }, ctx) => runWarehouseSync(runId, ctx);
export const warehouseSyncPartHandler: JobHandler<'warehouse-sync-part'> = (payload, ctx) => runSyncPartition(payload, ctx);
export const warehouseSyncFinishHandler: JobHandler<'warehouse-sync-finish'> = (payload, ctx) => finishPartitionedRun(payload, ctx);
