/**
 * Warehouse sources: validated config, a connection test before anything is stored, and the
 * config sealed at rest. Nothing here returns, logs or queues a config.
 */
import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { connectorDefinition, createConnector, supportedTypes } from '../../connectors/index.js';
import { WarehouseError, type WarehouseConnector } from '../../connectors/warehouse.js';
import type { Db } from '../db/knex.js';
import { dropSourceMirrorRows } from '../db/mirror-rows.repo.js';
import { dropSyncPartitions } from '../db/run-partitions.repo.js';
import { deleteSource, findSource, insertSource, listSources, type WarehouseSource } from '../db/warehouse.repo.js';
import { rowIdOf } from '../domain/row-id.js';
import { zodProblems } from '../domain/warehouse-import.js';
import { NotFoundError, ValidationError } from '../lib/errors.js';
import type { SecretBox } from '../lib/secrets.js';
import { isoTime } from '../domain/iso-time.js';

export interface SourceDeps {
  db: Db;
  config: Config;
  secrets: SecretBox;
}

export interface PublicSource {
  id: number;
  type: string;
  name: string;
  created: string;
}

export function publicSource(s: WarehouseSource): PublicSource {
  return { id: s.id, type: s.type, name: s.name, created: isoTime(s.createdAt) };
}

const sourceInput = z
  .object({
    type: z.string({ error: 'type is required' }),
    name: z.string({ error: 'name must be a string' }).trim().min(1, 'name must not be empty').max(255, 'name must be at most 255 characters').optional(),
    config: z.record(z.string(), z.unknown(), { error: 'config must be a JSON object' }),
  })
  .strict();

/** A 400 listing every problem found (docs/warehouse.md: `problems`). */
export function bad(problems: string[]): ValidationError {
  return new ValidationError(400, problems.join('; '), { problems });
}

/** A stored source's connection config, opened (for a connector only: never log, return or queue it). */
export function openSourceConfig(secrets: SecretBox, source: WarehouseSource): unknown {
  return JSON.parse(secrets.open(source.configSealed)) as unknown;
}

/** A connector for a stored source (opens the sealed config). */
export function connectorFor(deps: Pick<SourceDeps, 'config' | 'secrets'>, source: WarehouseSource): WarehouseConnector {
  return createConnector(source.type, openSourceConfig(deps.secrets, source), deps.config);
}

/** Runs `fn` with a connector, closing it after; source errors become a 400 with their message. */
export async function withSourceConnector<T>(
  deps: Pick<SourceDeps, 'config' | 'secrets'>,
  source: WarehouseSource,
  what: string,
  fn: (c: WarehouseConnector) => Promise<T>,
): Promise<T> {
  const connector = connectorFor(deps, source);
  try {
    return await fn(connector);
  } catch (err) {
    if (err instanceof WarehouseError) throw bad([`${what}: ${err.message}`]);
    throw err;
  } finally {
    await connector.close().catch(() => {});
  }
}

export async function createSource(deps: SourceDeps, projectId: number, body: unknown): Promise<PublicSource> {
  const parsed = sourceInput.safeParse(body);
  if (!parsed.success) throw bad(zodProblems(parsed.error));
  const { type, config } = parsed.data;
  const def = connectorDefinition(type);
  if (!def) throw bad([`type must be one of ${supportedTypes().join(', ')}, not ${JSON.stringify(type)}`]);
  const cfg = def.configSchema.safeParse(config);
  if (!cfg.success) throw bad(zodProblems(cfg.error, 'config'));
  const refused = def.checkConfig?.(cfg.data, deps.config);
  if (refused) throw bad([refused]);

  const connector = createConnector(type, cfg.data, deps.config);
  try {
    await connector.test();
  } catch (err) {
    if (err instanceof WarehouseError) throw bad([`connection test failed: ${err.message}`]);
    throw err;
  } finally {
    await connector.close().catch(() => {});
  }
  const source = await insertSource(deps.db, {
    projectId,
    type,
    name: parsed.data.name ?? `${type} source`,
    configSealed: deps.secrets.seal(JSON.stringify(cfg.data)),
    now: Date.now(),
  });
  return publicSource(source);
}

export async function listProjectSources(db: Db, projectId: number): Promise<PublicSource[]> {
  return (await listSources(db, projectId)).map(publicSource);
}

export function parseId(value: unknown, what: string): number {
  const n = rowIdOf(value);
  if (n === undefined) throw new NotFoundError(`${what} ${JSON.stringify(String(value))} not found`);
  return n;
}

export async function getSource(db: Db, projectId: number, id: number): Promise<WarehouseSource> {
  const source = await findSource(db, id, projectId);
  if (!source) throw new NotFoundError(`warehouse source ${id} not found in project ${projectId}`);
  return source;
}

/** Deletes the source and, with it, its imports and their run history (a running sync stops at its next batch). */
export async function removeSource(db: Db, projectId: number, id: number): Promise<void> {
  await getSource(db, projectId, id);
  await db.transaction(async (trx) => {
    await dropSourceMirrorRows(trx, id);
    await dropSyncPartitions(trx, { sourceId: id });
    await deleteSource(trx, id);
  });
}
