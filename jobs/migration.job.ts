/**
 * The migration service's job handlers: thin wrappers over src/migration's runners (one day of a
 * migration; the steps after the count and load passes). See docs/migration.md.
 */
import { runMigrationDay } from '../src/migration/migration-day.runner.js';
import { runMigrationFinalize } from '../src/migration/migration-finalize.runner.js';
import { isFinalAttempt } from '../src/runs/failure.js';
import type { JobHandler } from './types.js';

export const migrationDayHandler: JobHandler<'migration-day'> = (payload, ctx) =>
  runMigrationDay(payload, ctx, { finalAttempt: isFinalAttempt('migration-day', ctx.attempt) });

export const migrationFinalizeHandler: JobHandler<'migration-finalize'> = (payload, ctx) =>
  runMigrationFinalize(payload, ctx, { finalAttempt: isFinalAttempt('migration-finalize', ctx.attempt) });
