/**
 * The connector factory by source type. Each type registers a definition: how to validate the
 * `config` a user sends (a zod schema; its messages become the 400), and how to build a
 * connector from the validated config. The Snowflake connector adds one entry to `definitions`.
 */
import { ownValue } from '../src/lib/own.js';
import type { ZodType } from 'zod';
import type { Config } from '../config/index.js';
import { PostgresConnector, postgresConfigSchema, redshiftConfigSchema } from './postgres.connector.js';
import { SqliteConnector, sqliteConfigSchema } from './sqlite.connector.js';
import type { WarehouseConnector } from './warehouse.js';
import { checkSqlitePath } from './sqlite-path.js';
import { MysqlConnector } from './mysql/mysql.connector.js';
import { mysqlConfigSchema } from './mysql/mysql-options.js';
import { withReadDeadline } from './deadline.js';
import { reachGuard } from './reach.js';
import { REDSHIFT_FLAVOR } from './redshift/redshift-flavor.js';
import { snowflakeDefinition } from './snowflake/snowflake.factory.js';
import { bigqueryDefinition } from './bigquery/bigquery.factory.js';
import { databricksDefinition } from './databricks/databricks.factory.js';

export const SOURCE_TYPES = ['sqlite', 'postgres', 'snowflake', 'mysql', 'redshift', 'bigquery', 'databricks'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

export interface ConnectorDefinition<C = unknown> {
  /** Validates the user's `config`; it is sealed and stored exactly as parsed. */
  configSchema: ZodType<C>;
  /**
   * Extra checks that need the server's settings (allowed paths or hosts); returns a message for
   * a 400, or undefined. Optional.
   */
  checkConfig?: (config: C, settings: Config) => string | undefined;
  create: (config: C, settings: Config) => WarehouseConnector;
  /**
   * Its client library spends about as much CPU per row turning the wire format into rows (JSON
   * pages parsed, every value converted) as the sync spends preparing them: an events sync's
   * reader thread then only reads, and the writer's thread prepares, so the two share the cores.
   */
  costlyClient?: boolean;
}

export const definitions: Partial<Record<SourceType, ConnectorDefinition<any>>> = {
  sqlite: {
    configSchema: sqliteConfigSchema,
    checkConfig: checkSqlitePath,
    // Checked again at every open: a symlink or directory may have changed since the source was made.
    create: (config, settings) => new SqliteConnector(config, { DATABASE_URL: settings.DATABASE_URL, WAREHOUSE_SQLITE_ALLOWED_DIRS: settings.WAREHOUSE_SQLITE_ALLOWED_DIRS }),
  },
  postgres: {
    configSchema: postgresConfigSchema,
    create: (config, settings) => new PostgresConnector(config, { reach: reachGuard(settings) }),
  },
  snowflake: snowflakeDefinition,
  redshift: {
    configSchema: redshiftConfigSchema,
    create: (config, settings) => new PostgresConnector(config, { reach: reachGuard(settings), flavor: REDSHIFT_FLAVOR }),
  },
  mysql: {
    configSchema: mysqlConfigSchema,
    create: (config, settings) => new MysqlConnector(config, { reach: reachGuard(settings) }),
  },
  bigquery: bigqueryDefinition,
  databricks: databricksDefinition,
};

/** The definition of a source type sent by a user, or undefined (own keys only: never `toString`). */
export function connectorDefinition(type: string): ConnectorDefinition<any> | undefined {
  return ownValue(definitions as Record<string, ConnectorDefinition<any>>, type);
}

export function supportedTypes(): SourceType[] {
  return SOURCE_TYPES.filter((t) => definitions[t] !== undefined);
}

/** A connector for a validated config, every read bounded by WAREHOUSE_READ_TIMEOUT_MS (connectors/deadline.ts). */
export function createConnector(type: string, config: unknown, settings: Config): WarehouseConnector {
  const def = connectorDefinition(type);
  if (!def) throw new Error(`unsupported warehouse source type '${type}'`);
  return withReadDeadline(def.create(config, settings), settings.WAREHOUSE_READ_TIMEOUT_MS);
}
