/**
 * The bigquery entry of the connector factory (connectors/index.ts): the config schema a user's
 * `config` is validated with, and how a stored config becomes a connector.
 */
import type { Config } from '../../config/index.js';
import { reachGuard, type ReachSettings } from '../reach.js';
import { BigQueryConnector } from './bigquery.connector.js';
import { bigqueryConfigSchema, type BigQuerySourceConfig } from './bigquery-options.js';

export { BIGQUERY_SECRET_FIELDS } from './bigquery-options.js';

type Settings = Pick<Config, 'WAREHOUSE_BATCH_SIZE'> & ReachSettings;

// Google's own API hosts are what the source type means: reachable even when WAREHOUSE_ALLOWED_HOSTS
// lists only other hosts. A config that names another endpoint gets the ordinary reach rules.
const GOOGLE_HOSTS = ['bigquery.googleapis.com', 'oauth2.googleapis.com'];

export const bigqueryDefinition = {
  configSchema: bigqueryConfigSchema,
  costlyClient: true,
  create: (config: BigQuerySourceConfig, settings: Settings): BigQueryConnector =>
    // A page a few sync batches long: fewer round trips, and still one page in memory at a time.
    new BigQueryConnector({
      // Idempotent on a stored (already parsed) config; also takes a config as a user sends it.
      config: bigqueryConfigSchema.parse(config),
      pageRows: Math.min(Math.max(settings.WAREHOUSE_BATCH_SIZE * 5, 1000), 100_000),
      reach: reachGuard(settings, GOOGLE_HOSTS),
    }),
};
