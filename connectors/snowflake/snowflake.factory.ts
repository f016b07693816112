/**
 * The snowflake entry of the connector factory (connectors/index.ts): the config schema a user's
 * `config` is validated with, the operator's access_url check, and how a stored config becomes a
 * connector.
 */
import type { Config } from '../../config/index.js';
import { reachGuard, type ReachSettings } from '../reach.js';
import { SnowflakeConnector } from './snowflake.connector.js';
import { accessUrlProblem, snowflakeConfigSchema, snowflakeServerSettings, toConnectOptions, type SnowflakeSourceConfig } from './snowflake-options.js';

export { SNOWFLAKE_SECRET_FIELDS } from './snowflake-options.js';

type Settings = Pick<Config, 'SNOWFLAKE_ALLOWED_ACCESS_URLS' | 'SNOWFLAKE_CONNECT_TIMEOUT_MS'> & ReachSettings;

/** The host and port a login goes to: the access_url's, or `<account>.snowflakecomputing.com:443`. */
function loginEndpoint(config: SnowflakeSourceConfig): { host: string; port: number } {
  const url = config.access_url === undefined ? undefined : new URL(config.access_url.trim());
  if (!url) return { host: `${config.account}.snowflakecomputing.com`, port: 443 };
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) };
}

export const snowflakeDefinition = {
  configSchema: snowflakeConfigSchema,
  costlyClient: true,
  checkConfig: (config: SnowflakeSourceConfig, settings: Settings): string | undefined =>
    accessUrlProblem(config, snowflakeServerSettings(settings).allowedAccessUrls),
  create: (config: SnowflakeSourceConfig, settings: Settings): SnowflakeConnector => {
    const server = snowflakeServerSettings(settings);
    return new SnowflakeConnector({
      connect: toConnectOptions(config),
      connectTimeoutMs: server.connectTimeoutMs,
      // Checked again for stored sources: an origin the operator has since removed stops working.
      refused: accessUrlProblem(config, server.allowedAccessUrls),
      checkReach: () => {
        const { host, port } = loginEndpoint(config);
        // An origin the operator listed in SNOWFLAKE_ALLOWED_ACCESS_URLS is allowed like WAREHOUSE_ALLOWED_HOSTS.
        const listed = server.allowedAccessUrls.flatMap((o) => (URL.canParse(o) ? [new URL(o).hostname.replace(/^\[|\]$/g, '')] : []));
        return reachGuard(settings, listed).resolve(host, port);
      },
    });
  },
};
