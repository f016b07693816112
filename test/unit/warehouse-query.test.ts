/**
 * The source-side SQL: identifiers always quoted, values always bound, user queries wrapped.
 * Checked as text here and executed against a real SQLite database (injection attempts included).
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import {
  buildCountQuery,
  buildReadQuery,
  cleanUserQuery,
  POSTGRES_DIALECT,
  quoteIdent,
  splitTableName,
  SQLITE_DIALECT,
} from '../../connectors/sql-builder.js';
import { WarehouseError } from '../../connectors/warehouse.js';
import { definitionProblems, importInputSchema, schemaProblems, toDefinition } from '../../src/domain/warehouse-import.js';
import { scheduleCron } from '../../src/domain/sync-schedule.js';
import { appendLog } from '../../src/domain/sync-log.js';
import { readSpecFor } from '../../src/warehouse/read-spec.js';

describe('query building', () => {
  it('quotes identifiers and table parts', () => {
    expect(quoteIdent('a"b')).toBe('"a""b"');
    expect(splitTableName('analytics.events')).toEqual(['analytics', 'events']);
    expect(splitTableName('"my.schema"."t ""x"""')).toEqual(['my.schema', 't "x"']);
    expect(() => splitTableName('a..b')).toThrow(WarehouseError);
    expect(() => splitTableName('a.b.c.d')).toThrow(WarehouseError);
    expect(cleanUserQuery('SELECT 1;;  \n')).toBe('SELECT 1');
  });

  it('builds the plain, time_based and latest-row reads with bound values', () => {
    const plain = buildReadQuery({ source: { table: 's.t' }, columns: ['a', 'b'], orderBy: ['a'], offset: 10 }, POSTGRES_DIALECT);
    expect(plain).toEqual({
      sql: 'SELECT "__wh_src"."a", "__wh_src"."b" FROM "s"."t" AS "__wh_src" ORDER BY "a" OFFSET $1',
      params: [10],
    });
    const after = buildReadQuery({ source: { query: 'SELECT * FROM x;' }, after: { column: 'ins', value: '2024-01-01' }, orderBy: ['ins'] }, SQLITE_DIALECT);
    expect(after).toEqual({
      sql: 'SELECT "__wh_src".* FROM (SELECT * FROM x) AS "__wh_src" WHERE "ins" >= ? ORDER BY "ins"',
      params: ['2024-01-01'],
    });
    const latest = buildReadQuery(
      { source: { table: 'users' }, columns: ['id', 't', 'n'], latestBy: { keyColumns: ['id'], orderColumn: 't', tieBreak: ['n'] }, orderBy: ['id'] },
      POSTGRES_DIALECT,
    );
    expect(latest.sql).toBe(
      'SELECT "__wh_l"."id", "__wh_l"."t", "__wh_l"."n" FROM (SELECT "__wh_src".*, ROW_NUMBER() OVER (PARTITION BY "id" ORDER BY "t" DESC NULLS LAST, CAST("n" AS TEXT) DESC NULLS LAST) AS "__wh_rn" ' +
        'FROM "users" AS "__wh_src" WHERE "id" IS NOT NULL) AS "__wh_l" WHERE "__wh_l"."__wh_rn" = 1 ORDER BY "id"',
    );
    expect(buildCountQuery({ source: { table: 't' }, after: { column: 'c', value: 5 }, offset: 99 }, POSTGRES_DIALECT)).toEqual({
      sql: 'SELECT COUNT(*) AS n FROM (SELECT "__wh_src".* FROM "t" AS "__wh_src" WHERE "c" >= $1) AS "__wh_c"',
      params: [5],
    });
  });

  it('runs on a real SQLite database, and hostile names and values stay names and values', () => {
    const db = new Database(':memory:');
    db.exec(`CREATE TABLE "we""ird" ("k" TEXT, "t" INTEGER, "x; DROP TABLE y" TEXT); CREATE TABLE y (a INTEGER)`);
    const ins = db.prepare(`INSERT INTO "we""ird" VALUES (?, ?, ?)`);
    for (const r of [
      ['a', 1, 'p'],
      ['a', 3, 'q'],
      ['a', 3, 'r'],
      ['b', null, 's'],
      ['b', 2, 't'],
      [null, 9, 'u'],
    ]) {
      ins.run(...r);
    }
    const q = buildReadQuery(
      {
        source: { table: 'we"ird' },
        columns: ['k', 't', 'x; DROP TABLE y'],
        latestBy: { keyColumns: ['k'], orderColumn: 't', tieBreak: ['x; DROP TABLE y'] },
        orderBy: ['k'],
      },
      SQLITE_DIALECT,
    );
    expect(db.prepare(q.sql).all(...q.params)).toEqual([
      { k: 'a', t: 3, 'x; DROP TABLE y': 'r' },
      { k: 'b', t: 2, 'x; DROP TABLE y': 't' },
    ]);
    const hostile = buildReadQuery({ source: { table: 'we"ird' }, after: { column: 'k', value: "z' OR 1=1; DROP TABLE y; --" } }, SQLITE_DIALECT);
    expect(db.prepare(hostile.sql).all(...hostile.params)).toEqual([]);
    expect(db.prepare('SELECT count(*) AS n FROM y').get()).toEqual({ n: 0 });
    const resumed = buildReadQuery({ source: { table: 'we"ird' }, orderBy: ['t', 'x; DROP TABLE y'], offset: 4 }, SQLITE_DIALECT);
    expect(db.prepare(resumed.sql).all(...resumed.params).map((r: any) => r['x; DROP TABLE y'])).toEqual(['r', 'u']);
  });
});

describe('import definitions', () => {
  const base = { warehouse_source_id: 1, import_type: 'events', table_params: { table: 't' }, sync_mode: 'full_sync', event_name: 'e', time_column_name: 'ts' };
  const problems = (body: Record<string, unknown>) => {
    const p = importInputSchema.safeParse(body);
    return p.success ? definitionProblems(p.data) : p.error.issues.map((i) => i.message);
  };

  it('accepts a minimal definition and defaults the schedule', () => {
    expect(problems(base)).toEqual([]);
    expect(toDefinition(importInputSchema.parse(base)).schedule).toBe('daily');
    expect(toDefinition(importInputSchema.parse({ ...base, sync_mode: 'one_time' })).schedule).toBe('api_only');
  });

  it('explains what is wrong', () => {
    expect(problems({ ...base, event_column_name: 'ev' })).toEqual(['events imports need exactly one of event_name (a fixed name) or event_column_name']);
    expect(problems({ ...base, sync_mode: 'time_based' })).toEqual(['insert_time_column_name is required with sync_mode time_based (the watermark column)']);
    expect(problems({ ...base, group_key: 'g' })).toEqual(['group_key does not apply to events imports']);
    expect(problems({ ...base, schedule: 'every tuesday' })[0]).toMatch(/schedule must be hourly, daily, weekly, api_only or a cron expression/);
    expect(problems({ ...base, import_type: 'lookup_table', event_name: undefined, time_column_name: undefined, sync_mode: 'time_based' })).toEqual(
      expect.arrayContaining([
        'property_key_column_name is required for lookup_table imports (the key column)',
        'lookup_table imports replace the whole table: use sync_mode full_sync or one_time',
      ]),
    );
    expect(problems({ ...base, sync_mode: 'mirror_mode' })[0]).toMatch(/sync_mode must be one of/);
    expect(problems({ ...base, json_properties_column_name: Array.from({ length: 51 }, (_, i) => `c${i}`) })).toEqual([
      'json_properties_column_name must be a column name or a list of at most 50 of them',
    ]);
  });

  it('checks the named columns and a nullable time column against the source schema', () => {
    const def = toDefinition(importInputSchema.parse({ ...base, user_column_name: 'who' }));
    expect(
      schemaProblems(def, [
        { name: 'ts', type: 'timestamp', nullable: true },
        { name: 'x', type: 'text', nullable: true },
      ]),
    ).toEqual([
      "user_column_name: column 'who' does not exist in the source (columns: ts, x)",
      "time_column_name: column 'ts' is nullable in the source; full_sync needs a NOT NULL event time column (make it NOT NULL, or use time_based)",
    ]);
    const timeBased = toDefinition(importInputSchema.parse({ ...base, sync_mode: 'time_based', insert_time_column_name: 'ts' }));
    expect(schemaProblems(timeBased, [{ name: 'ts', type: 'timestamp', nullable: true }])).toEqual([]);
  });

  it('orders event reads by the insert time (time_based) and the dedupe identity columns', () => {
    const def = toDefinition(
      importInputSchema.parse({ ...base, sync_mode: 'time_based', insert_time_column_name: 'ins', user_column_name: 'u', event_name: undefined, event_column_name: 'ev' }),
    );
    const cols = ['ins', 'ts', 'ev', 'u', 'p'].map((name) => ({ name, type: 'text', nullable: true }));
    expect(readSpecFor(def, cols, 5)).toEqual({
      source: { table: 't' },
      columns: ['ins', 'ts', 'ev', 'u', 'p'],
      after: { column: 'ins', value: 5 },
      orderBy: ['ins', 'ts', 'ev', 'u'],
    });
    expect(readSpecFor(def, cols, null).after).toBeUndefined();
  });
});

describe('schedules and the run log', () => {
  it('named schedules, cron expressions (5 or 6 fields) and api_only', () => {
    expect(scheduleCron('hourly')).toEqual({ ok: true, cron: '0 * * * *' });
    expect(scheduleCron('api_only')).toEqual({ ok: true, cron: null });
    expect(scheduleCron('*/15 * * * *')).toEqual({ ok: true, cron: '*/15 * * * *' });
    expect(scheduleCron('*/2 * * * * *')).toEqual({ ok: true, cron: '*/2 * * * * *' });
    expect(scheduleCron('61 * * * *').ok).toBe(false);
    expect(scheduleCron('* *').ok).toBe(false);
  });

  it('keeps the first and the latest lines, counting what it drops', () => {
    let log: string[] = [];
    for (let i = 0; i < 1000; i++) log = appendLog(log, [`line ${i}`], 50);
    expect(log).toHaveLength(50);
    expect(log[0]).toBe('line 0');
    expect(log[19]).toBe('line 19');
    expect(log[20]).toBe('… 951 earlier lines omitted');
    expect(log[49]).toBe('line 999');
  });
});
