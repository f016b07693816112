/**
 * Starting a migration: validate the request, authenticate the receiving project by its token,
 * check it can take migrated data, write the run and its days to SQL, then enqueue the count job
 * of every day. SQL first: if Redis is unreachable the run still exists and the reconciler
 * enqueues it later.
 *
 * A second migration while one is queued or running for the project is refused with 409 naming
 * the active one (CONTRACT §4), also when it is the very same request posted again: one migration
 * at a time per project, so one tenant cannot queue unbounded export downloads, and a client that
 * retries a post finds its run in the 409's `active_migration_id`. Once a run has finished, the
 * same post starts a new run; it re-reads the source and stores nothing already stored (events
 * dedupe on their keys, profile `$set`s are latest-wins), so it only fills gaps.
 */
import { enqueueWithin } from '../queue/enqueue-deadline.js';
import { migrationLabel } from '../queue/job-labels.js';
import crypto from 'node:crypto';
import type { Config } from '../../config/index.js';
import { findProjectByToken } from '../db/accounts.repo.js';
import type { Db } from '../db/knex.js';
import type { Project } from '../db/accounts.repo.js';
import { findActiveMigration, findMigration, insertMigration, lockProjectMigrations, type MigrationRow } from '../db/migration-runs.repo.js';
import { daysBetween, parseMigrationRequest, SUPPORTED_SOURCE_TOOLS, type SourceTool } from '../domain/migration-request.js';
import { errorMessage, ValidationError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { sha256Hex, type SecretBox } from '../lib/secrets.js';
import type { JobQueues } from '../queue/queues.js';
import { countJobId } from './migration-job-ids.js';

export interface CreateMigrationDeps {
  db: Db;
  config: Config;
  secrets: SecretBox;
  queues: Pick<JobQueues, 'enqueue'>;
  log: Logger;
  /** Checked once the receiving project is known (MIGRATION_REQUIRE_AUTH); throws 401/403. */
  authorize?: (project: Project) => Promise<void>;
}

export function sourceToolOf(name: string): SourceTool {
  const tool = (SUPPORTED_SOURCE_TOOLS as readonly string[]).find((t) => t === name);
  if (!tool) {
    throw new ValidationError(404, `unknown source tool '${name}'; supported: ${SUPPORTED_SOURCE_TOOLS.join(', ')} (POST /migrate/<tool>)`, {
      supported: [...SUPPORTED_SOURCE_TOOLS],
    });
  }
  return tool as SourceTool;
}

export async function enqueueCountJobs(queues: Pick<JobQueues, 'enqueue'>, projectId: number, migrationId: string, days: readonly string[]): Promise<void> {
  for (const day of days) await queues.enqueue('migration-day', { migrationId, day }, { jobId: countJobId(migrationId, day), label: migrationLabel(projectId, migrationId, `count ${day}`) });
}

export async function createMigration(
  deps: CreateMigrationDeps,
  tool: SourceTool,
  body: unknown,
  now = Date.now(),
): Promise<MigrationRow> {
  const parsed = parseMigrationRequest(tool, body, now);
  if (!parsed.ok) throw new ValidationError(400, parsed.message, parsed.field ? { field: parsed.field } : undefined);
  const req = parsed.request;

  const project = await findProjectByToken(deps.db, req.serviceToken);
  if (!project) throw new ValidationError(401, 'SERVICE_TOKEN is not the token of any project');
  await deps.authorize?.(project);
  if (project.idMerge !== 'simplified') {
    throw new ValidationError(
      400,
      `project ${project.id} uses the original ID merge system; migrated data needs the simplified ID merge system ` +
        `(the source's user and device IDs map onto it). Migrate into a project created with simplified ID merge.`,
    );
  }
  if (project.residency !== deps.config.REGION) {
    throw new ValidationError(
      400,
      `project ${project.id} has ${project.residency} data residency but this deployment serves ${deps.config.REGION}; ` +
        `send the migration to the ${project.residency} deployment`,
      { region: project.residency },
    );
  }

  const sourceKeyHash = sha256Hex(`${tool}\u0000${req.apiKey}`);
  const id = crypto.randomUUID();
  const days = daysBetween(req.startDate, req.endDate);
  const sourceRegion = req.sourceRegion ?? (deps.config.REGION === 'EU' ? 'EU' : 'US');
  await deps.db.transaction(async (trx) => {
    await lockProjectMigrations(trx, project.id);
    const active = await findActiveMigration(trx, project.id);
    if (active) {
      const same =
        active.sourceTool === tool && active.sourceKeyHash === sourceKeyHash && active.startDate === req.startDate && active.endDate === req.endDate && active.dryRun === req.dryRun;
      throw new ValidationError(
        409,
        `project ${project.id} already has an active migration: ${active.id} (${active.status}, ${active.startDate} to ${active.endDate}` +
          `${same ? ', this same migration' : ''}); one migration runs at a time per project — wait for it to finish ` +
          `(GET /migrate/migrations/${active.id} shows its progress)`,
        { active_migration_id: active.id },
      );
    }
    await insertMigration(trx, {
      id,
      projectId: project.id,
      sourceTool: tool,
      sourceKeyHash,
      credentials: deps.secrets.seal(JSON.stringify({ apiKey: req.apiKey, apiSecret: req.apiSecret })),
      sourceRegion,
      startDate: req.startDate,
      endDate: req.endDate,
      dryRun: req.dryRun,
      days,
      now,
    });
  });
  deps.log.info({ migrationId: id, projectId: project.id, tool, startDate: req.startDate, endDate: req.endDate, dryRun: req.dryRun }, 'migration created');
  // The row as created (queued): read before enqueueing, or a fast worker's 'running' (or a
  // failure) would be what the 202 describes.
  const created = (await findMigration(deps.db, id))!;
  try {
    await enqueueWithin(enqueueCountJobs(deps.queues, project.id, id, days));
  } catch (err) {
    // The run is in SQL; the reconciler enqueues what Redis did not get.
    deps.log.warn({ migrationId: id, err: errorMessage(err) }, 'migration enqueue failed; the reconciler will retry');
  }
  return created;
}
