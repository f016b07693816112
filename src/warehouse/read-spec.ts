/**
 * What a sync asks the source for, per import type. The order is deterministic, so partitions
 * split it into key ranges and every attempt reads the rows in the same order (a retried attempt
 * re-reads from the first row — never an `offset` past the rows committed, which in a table that
 * changed between attempts would name another row):
 * - events: the insert-time column first (time_based), then the columns of the dedupe identity
 *   (time, event name, insert id, user, internal user id, device). Rows equal on all of those
 *   map to the same stored event, so where they fall relative to a checkpoint cannot matter;
 * - people/groups: the latest row per user/group ID (window query in the source; ties broken by
 *   the other columns' text, greatest wins; null IDs excluded), ordered by that ID;
 * - lookup tables: by the key column.
 */
import type { ColumnInfo, ReadSpec, TableRef } from '../../connectors/warehouse.js';
import type { ImportDefinition } from '../domain/warehouse-import.js';

const defined = (xs: (string | undefined)[]): string[] => [...new Set(xs.filter((x): x is string => x !== undefined))];

export function readSpecFor(def: ImportDefinition, columns: readonly ColumnInfo[], after: string | number | null | undefined): ReadSpec {
  const source: TableRef = def.table_params;
  const names = columns.map((c) => c.name);
  const spec: ReadSpec = { source, columns: names };
  if (def.sync_mode === 'time_based' && def.insert_time_column_name && after !== null && after !== undefined) {
    spec.after = { column: def.insert_time_column_name, value: after };
  }
  const insertTime = def.sync_mode === 'time_based' ? def.insert_time_column_name : undefined;
  switch (def.import_type) {
    case 'events':
      spec.orderBy = defined([
        // mirror: by the insert id first, so a run splits into key ranges and duplicates sit together.
        def.sync_mode === 'mirror' ? def.insert_id_column_name : undefined,
        insertTime,
        def.time_column_name,
        def.event_column_name,
        def.insert_id_column_name,
        def.user_column_name,
        def.distinct_id_column_name,
        def.device_column_name,
      ]);
      break;
    case 'people':
    case 'groups': {
      const key = def.import_type === 'people' ? def.user_column_name! : def.group_id_column!;
      const orderColumn = def.time_column_name!;
      spec.latestBy = {
        keyColumns: [key],
        orderColumn,
        tieBreak: names.filter((n) => n !== key && n !== orderColumn).sort(),
      };
      spec.orderBy = [key];
      break;
    }
    case 'lookup_table':
      spec.orderBy = [def.property_key_column_name!];
      break;
  }
  return spec;
}

/** The `$warehouse_table` stamp: the table name, or "(query)" for a SELECT. */
export function tableLabel(def: ImportDefinition): string {
  return 'table' in def.table_params ? def.table_params.table : '(query)';
}
