/**
 * The databricks entry of the connector factory (connectors/index.ts): the config schema a user's
 * `config` is validated with, and how a stored config becomes a connector.
 */
import { reachGuard, type ReachSettings } from '../reach.js';
import { DatabricksConnector } from './databricks.connector.js';
import { databricksConfigSchema, type DatabricksSourceConfig } from './databricks-options.js';

export { DATABRICKS_SECRET_FIELDS } from './databricks-options.js';

export const databricksDefinition = {
  configSchema: databricksConfigSchema,
  create: (config: DatabricksSourceConfig, settings: ReachSettings): DatabricksConnector =>
    // Parsing is idempotent on a stored config, and also takes a config as a user sends it.
    new DatabricksConnector({ config: databricksConfigSchema.parse(config), reach: reachGuard(settings) }),
};
