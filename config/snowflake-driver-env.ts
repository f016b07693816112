/**
 * snowflake-sdk reads a few environment switches at require time (not through its API). This is
 * the one place that sets them, so the connector can stay free of `process.env`; it must run
 * before the driver module is first loaded (connectors/snowflake/snowflake-driver.ts does that).
 *
 * - SNOWFLAKE_DISABLE_PLATFORM_DETECTION: otherwise, merely loading the driver probes cloud
 *   metadata endpoints (169.254.169.254, metadata.google.internal) and calls AWS STS with whatever
 *   AWS credentials the host has, to put the result in login telemetry. A server should not do
 *   that as a side effect, and the STS client prints a Node-version warning on stderr.
 * - SF_TELEMETRY_DISABLE_CONNECTION_SHAPE: skips a telemetry post after every login.
 *
 * A value an operator set explicitly is left alone.
 */
export function applySnowflakeDriverEnv(env: Record<string, string | undefined> = process.env): void {
  env.SNOWFLAKE_DISABLE_PLATFORM_DETECTION ??= 'true';
  env.SF_TELEMETRY_DISABLE_CONNECTION_SHAPE ??= 'true';
}
