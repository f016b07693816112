/** BullMQ transport for `warehouse-sync`: the payload is `{runId}`; everything else is read from SQL. */
import { runWarehouseSync } from './warehouse-sync.handler.js';
import type { JobHandler } from './types.js';

export const warehouseSyncHandler: JobHandler<'warehouse-sync'> = ({ runId }, ctx) => runWarehouseSync(runId, ctx);
