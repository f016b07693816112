/** The Redshift flavor's SQL (run against PostgreSQL in the shared suites; here what only Redshift would see). */
import { describe, expect, it } from 'vitest';
import { describeTableSql, parseSuper, REDSHIFT_DIALECT, REDSHIFT_FLAVOR } from '../../connectors/redshift/redshift-flavor.js';
import { buildCountQuery, buildReadQuery, buildSplitPointsQuery, POSTGRES_DIALECT } from '../../connectors/sql-builder.js';
import { connectionStringProblem, parsePostgresConnectionString } from '../../connectors/postgres-options.js';

describe('redshift SQL', () => {
  it('the latest row per key is a ROW_NUMBER window (no DISTINCT ON), tie-breaks cast to VARCHAR(65535), NULLS LAST', () => {
    const q = buildReadQuery(
      { source: { table: 'analytics.users' }, latestBy: { keyColumns: ['user_id'], orderColumn: 'updated_at', tieBreak: ['email'] }, columns: ['user_id', 'email'], orderBy: ['user_id'], offset: 5 },
      REDSHIFT_DIALECT,
    );
    expect(q.sql).toBe(
      'SELECT "__wh_l"."user_id", "__wh_l"."email" FROM (SELECT "__wh_src".*, ROW_NUMBER() OVER (PARTITION BY "user_id" ORDER BY "updated_at" DESC NULLS LAST, ' +
        'CAST("email" AS VARCHAR(65535)) DESC NULLS LAST) AS "__wh_rn" FROM "analytics"."users" AS "__wh_src" WHERE "user_id" IS NOT NULL) AS "__wh_l" ' +
        'WHERE "__wh_l"."__wh_rn" = 1 ORDER BY "user_id" OFFSET $1',
    );
    expect(q.params).toEqual([5]);
    expect(q.sql).not.toMatch(/DISTINCT ON|AS TEXT/);
    // PostgreSQL keeps TEXT (unbounded there; VARCHAR(256) in Redshift would cut long values).
    expect(buildReadQuery({ source: { table: 't' }, latestBy: { keyColumns: ['k'], orderColumn: 'o', tieBreak: ['x'] } }, POSTGRES_DIALECT).sql).toMatch(/CAST\("x" AS TEXT\)/);
  });

  it('watermark, count and split points bind values and use only window syntax Redshift has', () => {
    const spec = { source: { query: 'SELECT * FROM events;' }, after: { column: 'loaded_at', value: '2024-05-01 00:00:00' } };
    expect(buildCountQuery(spec, REDSHIFT_DIALECT)).toEqual({
      sql: 'SELECT COUNT(*) AS n FROM (SELECT "__wh_src".* FROM (SELECT * FROM events) AS "__wh_src" WHERE "loaded_at" >= $1) AS "__wh_c"',
      params: ['2024-05-01 00:00:00'],
    });
    const split = buildSplitPointsQuery(spec, 'id', 1000, REDSHIFT_DIALECT);
    expect(split.sql).toMatch(/ROW_NUMBER\(\) OVER \(ORDER BY "__wh_s"\."id"\)/);
    expect(split.params).toEqual(['2024-05-01 00:00:00', 1000]);
  });

  it('describes tables from SVV_COLUMNS (information_schema as the fallback), parses SUPER as JSON, reads in BEGIN READ ONLY', () => {
    expect(describeTableSql('svv_columns', true)).toBe(
      'SELECT column_name AS name, data_type AS type, is_nullable AS nullable FROM pg_catalog.svv_columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
    );
    expect(describeTableSql('information_schema.columns', false)).toMatch(/FROM information_schema\.columns WHERE table_schema = current_schema\(\) AND table_name = \$1/);
    expect(parseSuper('{"a":[1,{"b":null}]}')).toEqual({ a: [1, { b: null }] });
    expect(parseSuper('"text"')).toBe('text');
    expect(parseSuper('not json')).toBe('not json');
    expect(REDSHIFT_FLAVOR.parsers[4000]).toBe(parseSuper);
    expect(REDSHIFT_FLAVOR.beginStream).toBe('BEGIN READ ONLY');
    expect(REDSHIFT_FLAVOR.sessionSetup.join(';')).not.toMatch(/SESSION CHARACTERISTICS/);
  });

  it('connection strings: port 5439 by default, file-reading parameters refused', () => {
    expect(parsePostgresConnectionString('postgres://u:p@cluster.abc.us-east-1.redshift.amazonaws.com/dev', 5439)).toMatchObject({ port: 5439, database: 'dev', user: 'u' });
    expect(connectionStringProblem('postgres://u@h/dev?sslrootcert=/etc/ssl/ca.pem', 5439)).toMatch(/sslrootcert is refused/);
  });
});
