/**
 * A mirror run on a source with native change tracking (Snowflake's CHANGES clause): instead of
 * reading the whole table and sweeping what vanished, read only the net changes since the change
 * point the last successful run took, and apply them through the same mirror batches — a delete
 * row deletes its key, an upsert row goes through the snapshot (new, changed, or the same) like a
 * row of a full read, so both ways give the same project, the same snapshot and the same counts.
 *
 * Change reads are small and not resumable by offset (the net change set moves with the table),
 * so an interrupted or retried attempt reads them again from the start: deletes already applied
 * count nothing, upserts already applied are the same. Per attempt, a key's second upsert is a
 * duplicate, as in a full read.
 */
import { ChangesUnavailable, WarehouseReadAborted, type ChangeRow, type Row } from '../connectors/warehouse.js';
import { idValue } from '../src/domain/warehouse-values.js';
import { insertIdOfCell } from '../src/domain/warehouse-mapping.js';
import { deleteMirrorKeys } from '../src/warehouse/mirror-batch.js';
import type { JobContext } from './types.js';
import { mirrorCommitter, mirrorContext, Superseded, type RangeRead } from './warehouse-sync.read.js';

export type ChangesOutcome = 'done' | 'interrupted' | 'unavailable';

export async function readChangesAndCommit(r: RangeRead, since: number, attempt: number, ctx: JobContext): Promise<ChangesOutcome> {
  const def = r.imp.definition;
  const kind = def.import_type as 'events' | 'people' | 'groups';
  const keyColumn = kind === 'events' ? def.insert_id_column_name! : kind === 'people' ? def.user_column_name! : def.group_id_column!;
  // Marks of this attempt: a replay by a later attempt finds its rows "the same", not duplicates.
  const mc = { ...mirrorContext(r, ctx), runId: `${r.run.id}:c${attempt}` };
  const commitRows = mirrorCommitter(def, mc, r, ctx.config.WAREHOUSE_BATCH_SIZE);
  const spec = { ...r.spec, offset: undefined };

  let batch: ChangeRow[] = [];
  const flush = async (): Promise<boolean> => {
    if (batch.length === 0) return true;
    const rows = batch;
    batch = [];
    // Sorted by key with a key's delete first: deleting before upserting keeps that order.
    const deletes = rows
      .filter((c) => c.action === 'delete')
      .map((c) => idValue(c.row[keyColumn]))
      .filter((k): k is string => k !== undefined)
      .map((k) => (kind === 'events' ? insertIdOfCell(k) : k));
    if (deletes.length > 0 && !(await deleteMirrorKeys(mc, kind, def.group_key, r.state, deletes, deletes.length))) return false;
    const upserts: Row[] = rows.filter((c) => c.action === 'upsert').map((c) => c.row);
    return upserts.length === 0 || commitRows(upserts);
  };

  try {
    for await (const change of r.connector.streamChanges!(spec, since, keyColumn, { log: ctx.log, signal: ctx.signal })) {
      batch.push(change);
      if (batch.length >= ctx.config.WAREHOUSE_BATCH_SIZE) {
        if (!(await flush())) throw new Superseded();
        await r.afterCommit();
        if (ctx.signal.aborted) return 'interrupted';
      }
    }
    if (!(await flush())) throw new Superseded();
    await r.afterCommit();
  } catch (err) {
    if (err instanceof ChangesUnavailable) {
      await ctx.logLine(`change tracking unavailable (${err.message}): reading the whole table (snapshot diff)`);
      r.state.say(`change tracking unavailable (${err.message}): reading the whole table (snapshot diff)`);
      return 'unavailable';
    }
    if (err instanceof WarehouseReadAborted) return 'interrupted';
    throw err;
  }
  return 'done';
}
