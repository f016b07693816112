/**
 * What differs between the sources spoken to over the PostgreSQL protocol (postgres, redshift):
 * the SQL dialect, the session setup, how a table is described, and how values parse. The
 * connector (postgres.connector.ts) is one; a flavor is the per-warehouse knowledge.
 */
import type pg from 'pg';
import type { SqlDialect } from './sql-builder.js';
import type { ColumnInfo } from './warehouse.js';

export interface PgFlavor {
  readonly type: 'postgres' | 'redshift';
  /** Used in messages: "cannot connect to PostgreSQL". */
  readonly label: string;
  readonly dialect: SqlDialect;
  readonly defaultPort: number;
  /** Statements run once per session (time zone, read-only default where the server has one). */
  readonly sessionSetup: readonly string[];
  /** Opens the transaction a stream reads in (read-only, one snapshot). */
  readonly beginStream: string;
  /** Value parsers by type OID for the ones the default parsing gets wrong. */
  readonly parsers: Readonly<Record<number, (text: string) => unknown>>;
  /** Columns of a named table (schema-qualified or on the search path); [] when there is no such table. */
  describeTable(c: pg.Client, schema: string | undefined, table: string): Promise<ColumnInfo[]>;
}
