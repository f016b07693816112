/** PostgreSQL itself: the catalog (pg_attribute), REPEATABLE READ snapshots, a read-only session. */
import type pg from 'pg';
import type { PgFlavor } from './pg-flavor.js';
import { POSTGRES_DIALECT, quoteIdent } from './sql-builder.js';

export const POSTGRES_FLAVOR: PgFlavor = {
  type: 'postgres',
  label: 'PostgreSQL',
  dialect: POSTGRES_DIALECT,
  defaultPort: 5432,
  sessionSetup: ["SET TIME ZONE 'UTC'", 'SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY'],
  beginStream: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
  parsers: {},
  async describeTable(c: pg.Client, schema: string | undefined, table: string) {
    const name = (schema === undefined ? [table] : [schema, table]).map(quoteIdent).join('.');
    const regclass = await c.query('SELECT to_regclass($1)::oid AS oid', [name]);
    const oid = regclass.rows[0]?.oid;
    if (oid === null || oid === undefined) return [];
    const res = await c.query(
      `SELECT attname AS name, format_type(atttypid, atttypmod) AS type, NOT attnotnull AS nullable
         FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
      [oid],
    );
    return res.rows.map((r) => ({ name: r.name, type: String(r.type).toLowerCase(), nullable: r.nullable }));
  },
};
