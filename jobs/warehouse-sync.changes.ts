/**
 * A mirror run on a source with native change tracking (Snowflake's CHANGES clause, Databricks'
 * change data feed): instead of
 * reading the whole table and sweeping what vanished, read only the net changes since the change
 * point the last successful run took, and apply them through the same mirror batches — a delete
 * row deletes its key, an upsert row goes through the snapshot (new, changed, or the same) like a
 * row of a full read, so both ways give the same project, the same snapshot and the same counts.
 *
 * Only events mirrors read changes. A profile is the latest row of its key by the time column,
 * and a change row tells neither whether it is the latest nor which row is latest once it is
 * deleted; people and groups mirrors therefore read the whole table and diff it.
 *
 * A changed row that is no longer valid (its time turned NULL, say) has no row to stand for its
 * key: after each commit, the keys of the batch's upserts that the commit did not mark are
 * deleted like vanished rows, as the sweep of a full read deletes them.
 *
 * Change reads are small and not resumable by offset (the net change set moves with the table),
 * so an interrupted or retried attempt reads them again from the start: deletes already applied
 * count nothing, upserts already applied are the same. Per attempt, a key's second upsert is a
 * duplicate, as in a full read.
 */
import { ChangesUnavailable, WarehouseReadAborted, type ChangeRow, type Row } from '../connectors/warehouse.js';
import { idValue } from '../src/domain/warehouse-values.js';
import { insertIdOfCell } from '../src/domain/warehouse-mapping.js';
import { loadMirrorRows } from '../src/db/mirror-rows.repo.js';
import { deleteMirrorKeys } from '../src/warehouse/mirror-batch.js';
import type { JobContext } from './types.js';
import { mirrorCommitter, mirrorContext, Superseded, type RangeRead } from './warehouse-sync.read.js';

export type ChangesOutcome = 'done' | 'interrupted' | 'unavailable';

/** Why a people or groups mirror reads the whole table even where the warehouse tracks changes. */
export const PROFILES_NEED_FULL_READ = 'a profile is the latest row of its key, which change rows do not tell: reading the whole table (snapshot diff)';

export async function readChangesAndCommit(r: RangeRead, since: number, attempt: number, ctx: JobContext): Promise<ChangesOutcome> {
  const def = r.imp.definition;
  const kind = def.import_type as 'events' | 'people' | 'groups';
  if (kind !== 'events') {
    await ctx.logLine(PROFILES_NEED_FULL_READ);
    r.state.say(PROFILES_NEED_FULL_READ);
    return 'unavailable';
  }
  const keyColumn = kind === 'events' ? def.insert_id_column_name! : kind === 'people' ? def.user_column_name! : def.group_id_column!;
  // Marks of this attempt: a replay by a later attempt finds its rows "the same", not duplicates.
  const mc = { ...mirrorContext(r, ctx), runId: `${r.run.id}:c${attempt}` };
  const commitRows = mirrorCommitter(def, mc, r, ctx.config.WAREHOUSE_BATCH_SIZE);
  const spec = { ...r.spec, offset: undefined };

  const keyOf = (c: ChangeRow) => idValue(c.row[keyColumn]);
  /** Snapshot keys of these upsert rows that their commit did not mark: no valid row of theirs is left. */
  const keysLeftUnmarked = async (rows: Row[]): Promise<string[]> => {
    const keys = rows.flatMap((row) => {
      const cell = idValue(row[keyColumn]);
      return cell === undefined ? [] : [insertIdOfCell(cell)];
    });
    const known = await loadMirrorRows(ctx.db, mc.importId, keys);
    return [...known].filter(([, entry]) => entry.seenRun !== mc.runId).map(([key]) => key);
  };
  // Decided rows of whole keys: the deletes and the upserts of the next commit.
  let deletes: string[] = [];
  let upserts: Row[] = [];
  const flush = async (): Promise<void> => {
    const [d, u] = [deletes, upserts];
    [deletes, upserts] = [[], []];
    if (d.length > 0 && !(await deleteMirrorKeys(mc, kind, def.group_key, r.state, d, d.length))) throw new Superseded();
    if (u.length > 0) {
      if (!(await commitRows(u))) throw new Superseded();
      const stale = await keysLeftUnmarked(u);
      if (stale.length > 0 && !(await deleteMirrorKeys(mc, kind, def.group_key, r.state, stale, 0))) throw new Superseded();
    }
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
      if (key !== undefined) deletes.push(insertIdOfCell(key));
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
