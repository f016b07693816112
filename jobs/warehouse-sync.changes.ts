/**
 * A mirror run on a source with native change tracking (Snowflake's CHANGES clause, Databricks'
 * change data feed): instead of
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

  const keyOf = (c: ChangeRow) => idValue(c.row[keyColumn]);
  // Decided rows of whole keys: the deletes and the upserts of the next commit.
  let deletes: string[] = [];
  let upserts: Row[] = [];
  const flush = async (): Promise<void> => {
    const [d, u] = [deletes, upserts];
    [deletes, upserts] = [[], []];
    if (d.length > 0 && !(await deleteMirrorKeys(mc, kind, def.group_key, r.state, d, d.length))) throw new Superseded();
    if (u.length > 0 && !(await commitRows(u))) throw new Superseded();
    await r.afterCommit();
  };
  // Changes come ordered by key, and a key is decided on all its changes at once (never split
  // over two commits): an upsert if it has one — an update is a delete and an insert of the same
  // key, a row deleted and inserted again is there now — else a delete.
  let group: ChangeRow[] = [];
  const decide = () => {
    const ups = group.filter((c) => c.action === 'upsert');
    if (ups.length > 0) upserts.push(...ups.map((c) => c.row));
    else {
      const key = keyOf(group[0]!);
      if (key !== undefined) deletes.push(kind === 'events' ? insertIdOfCell(key) : key);
    }
    group = [];
  };

  try {
    for await (const change of r.connector.streamChanges!(spec, since, keyColumn, { log: ctx.log, signal: ctx.signal })) {
      if (group.length > 0 && keyOf(change) !== keyOf(group[0]!)) {
        decide();
        if (deletes.length + upserts.length >= ctx.config.WAREHOUSE_BATCH_SIZE) {
          await flush();
          if (ctx.signal.aborted) return 'interrupted';
        }
      }
      group.push(change);
    }
    if (group.length > 0) decide();
    await flush();
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
