/**
 * Hot properties: the few properties reports segment by most (country, browser, campaign…) get a
 * column of their own holding the row's segment labels, computed by ClickHouse on insert
 * (`MATERIALIZED`). A segmentation on one of them then reads — and collapses through FINAL —
 * one small array instead of the nine typed property arrays: ~6× less work at 2M events
 * (docs/scaling.md). The column's expression is the very SQL a report would compute from the
 * arrays, so both ways give the same labels, and rows written before the column existed are
 * computed from their arrays when read. The column's COMMENT names its property (set by the
 * release), which is how readers find the columns without any configuration of their own.
 * Pure: builds text.
 */
import crypto from 'node:crypto';
import { isEventColumn } from '../where-plan.js';
import { segmentLabelsSql } from './clickhouse-expression.js';
import { EXPRESSION_COLUMNS } from './clickhouse-reads.js';

/**
 * What dashboards group by most: country, browser, OS and campaign source. Few on purpose: each
 * column adds 4 files to every part, and on 18.16 a small insert's cost is mostly creating its
 * part's files (docs/scaling.md).
 */
export const DEFAULT_HOT_PROPERTIES = ['mp_country_code', '$browser', '$os', 'utm_source'];

export const HOT_COLUMN_PREFIX = 'seg_';

/**
 * EVENT_STORE_HOT_PROPERTIES: comma-separated property names; unset means the defaults, an empty
 * value means none.
 */
export function parseHotProperties(value: string | undefined): string[] {
  if (value === undefined) return DEFAULT_HOT_PROPERTIES;
  const names = [...new Set(value.split(',').map((s) => s.trim()).filter(Boolean))];
  const fixed = names.filter(isEventColumn);
  if (fixed.length > 0) throw new Error(`EVENT_STORE_HOT_PROPERTIES: ${fixed.join(', ')} ${fixed.length === 1 ? 'is a column' : 'are columns'} of every event already, not a property`);
  return names;
}

/** `seg_<readable part>_<hash>`: readable for operators, unique for any property name. */
export function hotColumnName(property: string): string {
  const readable = property.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 40);
  const hash = crypto.createHash('sha1').update(property).digest('hex').slice(0, 8);
  return `${HOT_COLUMN_PREFIX}${readable}_${hash}`;
}

/**
 * The column's definition for `ALTER TABLE … ADD COLUMN`. `MATERIALIZED` where rows are inserted
 * (the table, or a cluster's Distributed table); a cluster's shard tables take it as `DEFAULT`,
 * because the Distributed table computes it and sends it along, which a shard would refuse for
 * a MATERIALIZED column. Either way no writer names it, and old parts compute it when read.
 */
export function hotColumnDefinition(property: string, kind: 'MATERIALIZED' | 'DEFAULT'): string {
  const labels = segmentLabelsSql({ kind: 'property', name: property }, EXPRESSION_COLUMNS);
  return `${hotColumnName(property)} Array(String) ${kind} ${labels}`;
}
