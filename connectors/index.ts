/**
 * The connector factory by source type. Each type registers a definition: how to validate the
 * `config` a user sends (a zod schema; its messages become the 400), and how to build a
 * connector from the validated config. The Snowflake connector adds one entry to `definitions`.
 */
import type { ZodType } from 'zod';
import type { Config } from '../config/index.js';
import { PostgresConnector, postgresConfigSchema } from './postgres.connector.js';
import { SqliteConnector, sqliteConfigSchema } from './sqlite.connector.js';
import type { WarehouseConnector } from './warehouse.js';
import { checkSqlitePath } from './sqlite-path.js';
import { snowflakeDefinition } from './snowflake/snowflake.factory.js';

export const SOURCE_TYPES = ['sqlite', 'postgres', 'snowflake'] as const;
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
}

export const definitions: Partial<Record<SourceType, ConnectorDefinition<any>>> = {
  sqlite: {
    configSchema: sqliteConfigSchema,
    checkConfig: checkSqlitePath,
    create: (config) => new SqliteConnector(config),
  },
  postgres: {
    configSchema: postgresConfigSchema,
    create: (config) => new PostgresConnector(config),
  },
  snowflake: snowflakeDefinition,
};

export function isSupportedType(type: string): type is SourceType {
  return definitions[type as SourceType] !== undefined;
}

export function supportedTypes(): SourceType[] {
  return SOURCE_TYPES.filter((t) => definitions[t] !== undefined);
}

/** A connector for a stored (already validated) config. */
export function createConnector(type: string, config: unknown, settings: Config): WarehouseConnector {
  const def = definitions[type as SourceType];
  if (!def) throw new Error(`unsupported warehouse source type '${type}'`);
  return def.create(config, settings);
}
