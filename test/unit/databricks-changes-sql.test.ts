import { describe, expect, it } from 'vitest';
import { buildChangesSql } from '../../connectors/databricks/databricks-sql.js';
import type { ColumnInfo } from '../../connectors/warehouse.js';

const cols: ColumnInfo[] = [
  { name: 'id', type: 'bigint', nullable: false },
  { name: 'user', type: 'string', nullable: true },
];

describe('databricks change data feed query', () => {
  it('keeps the last change per key (a postimage over its preimage), ordered by key, since a timestamp parameter', () => {
    const sql = buildChangesSql({ source: { table: "main.analytics.o'rders" }, columns: ['id', 'user'] }, cols, Date.UTC(2024, 0, 2, 3, 4, 5, 6), 'id');
    expect(sql.query).toBe(
      'SELECT `id`, `user`, `_change_type` FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY `id` ORDER BY `_commit_version` DESC, ' +
        "CASE WHEN `_change_type` = 'update_preimage' THEN 1 ELSE 0 END) AS `__rn` FROM table_changes('main.analytics.o''rders', :cdf_since)) AS `__c` " +
        'WHERE `__rn` = 1 ORDER BY `id`',
    );
    expect(sql.params).toEqual([{ name: 'cdf_since', value: '2024-01-02T03:04:05.006Z', type: 'TIMESTAMP' }]);
  });

  it('refuses a query source and columns the table does not have', () => {
    expect(() => buildChangesSql({ source: { query: 'SELECT 1' } }, cols, 0, 'id')).toThrow(/reads a table, not a query/);
    expect(() => buildChangesSql({ source: { table: 't' } }, cols, 0, 'nope')).toThrow(/not in the source/);
  });
});
