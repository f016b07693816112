/**
 * The snowflake entry of the connector factory (connectors/index.ts): the config schema a user's
 * `config` is validated with, the operator's access_url check, and how a stored config becomes a
 * connector.
 */
import type { Config } from '../../config/index.js';
import { SnowflakeConnector } from './snowflake.connector.js';
import { accessUrlProblem, snowflakeConfigSchema, snowflakeServerSettings, toConnectOptions, type SnowflakeSourceConfig } from './snowflake-options.js';

export { SNOWFLAKE_SECRET_FIELDS } from './snowflake-options.js';

type Settings = Pick<Config, 'SNOWFLAKE_ALLOWED_ACCESS_URLS' | 'SNOWFLAKE_CONNECT_TIMEOUT_MS'>;

export const snowflakeDefinition = {
  configSchema: snowflakeConfigSchema,
  checkConfig: (config: SnowflakeSourceConfig, settings: Settings): string | undefined =>
    accessUrlProblem(config, snowflakeServerSettings(settings).allowedAccessUrls),
  create: (config: SnowflakeSourceConfig, settings: Settings): SnowflakeConnector => {
    const server = snowflakeServerSettings(settings);
    return new SnowflakeConnector({
      connect: toConnectOptions(config),
      connectTimeoutMs: server.connectTimeoutMs,
      // Checked again for stored sources: an origin the operator has since removed stops working.
      refused: accessUrlProblem(config, server.allowedAccessUrls),
    });
  },
};
