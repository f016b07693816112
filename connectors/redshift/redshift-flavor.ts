/**
 * Amazon Redshift over the PostgreSQL protocol. Its dialect differs from PostgreSQL's where our
 * reads touch it:
 *   - no DISTINCT ON (the latest row per key is ROW_NUMBER() over a window, as everywhere);
 *   - TEXT is VARCHAR(256): tie-break casts go to VARCHAR(65535) so long values compare whole;
 *   - SUPER (semi-structured) values arrive as JSON text: parsed, like PostgreSQL's json/jsonb;
 *   - no to_regclass, and pg_attribute misses late-binding views and Spectrum tables: a table is
 *     described from SVV_COLUMNS, falling back to information_schema.columns where that view is
 *     missing (PostgreSQL, which the tests run this flavor against);
 *   - no SET SESSION CHARACTERISTICS: read-only comes from BEGIN READ ONLY around every statement;
 *   - isolation is always serializable snapshot: plain BEGIN READ ONLY.
 */
import type pg from 'pg';
import type { PgFlavor } from '../pg-flavor.js';
import { POSTGRES_DIALECT, type SqlDialect } from '../sql-builder.js';

/** SUPER's type OID in Redshift. */
export const REDSHIFT_SUPER_OID = 4000;

export const REDSHIFT_DIALECT: SqlDialect = {
  ...POSTGRES_DIALECT,
  name: 'redshift',
  castText: (e) => `CAST(${e} AS VARCHAR(65535))`,
};

/** A SUPER value: JSON text, or (for a scalar that is not JSON) the text itself. */
export function parseSuper(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The catalog query describing a table, from SVV_COLUMNS or, missing that, information_schema. */
export function describeTableSql(source: 'svv_columns' | 'information_schema.columns', schemaGiven: boolean): string {
  return (
    `SELECT column_name AS name, data_type AS type, is_nullable AS nullable FROM ${source === 'svv_columns' ? 'pg_catalog.svv_columns' : 'information_schema.columns'} ` +
    `WHERE table_schema = ${schemaGiven ? '$1' : 'current_schema()'} AND table_name = ${schemaGiven ? '$2' : '$1'} ORDER BY ordinal_position`
  );
}

export const REDSHIFT_FLAVOR: PgFlavor = {
  type: 'redshift',
  label: 'Redshift',
  dialect: REDSHIFT_DIALECT,
  defaultPort: 5439,
  sessionSetup: ["SET timezone TO 'UTC'"],
  beginStream: 'BEGIN READ ONLY',
  parsers: { [REDSHIFT_SUPER_OID]: parseSuper },
  async describeTable(c: pg.Client, schema: string | undefined, table: string) {
    const svv = await c.query("SELECT 1 FROM pg_catalog.pg_class WHERE relname = 'svv_columns' LIMIT 1");
    const sql = describeTableSql(svv.rowCount ? 'svv_columns' : 'information_schema.columns', schema !== undefined);
    const params = schema === undefined ? [table] : [schema, table];
    let res = await c.query(sql, params);
    // Unquoted names are folded to lower case in Redshift; a user may have typed them otherwise.
    if (res.rowCount === 0 && params.some((p) => p !== p.toLowerCase())) res = await c.query(sql, params.map((p) => p.toLowerCase()));
    return res.rows.map((r) => ({ name: r.name, type: String(r.type).toLowerCase(), nullable: String(r.nullable).toUpperCase() === 'YES' }));
  },
};
