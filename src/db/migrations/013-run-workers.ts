import type { Knex } from 'knex';

/**
 * Every worker ("host:pid") that took part of a run — a sync run, a batch import or a migration,
 * split or not: one row per run and worker, so a run killed on one worker and finished on another
 * names both (the `worker` columns of 007/009 kept only the last). Filled from those columns;
 * sync_runs.worker is no longer written (run_partitions' and migration_days' still name the
 * worker that last took each partition or day).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('run_workers', (t) => {
    t.string('kind', 24).notNullable(); // sync | migration | batch-import, as run_partitions
    t.string('run_id', 64).notNullable();
    t.string('worker', 200).notNullable();
    t.primary(['kind', 'run_id', 'worker']);
  });
  await knex.raw(`INSERT INTO run_workers (kind, run_id, worker) SELECT 'sync', id, worker FROM sync_runs WHERE worker IS NOT NULL`);
  await knex.raw(`INSERT INTO run_workers (kind, run_id, worker) SELECT DISTINCT kind, run_id, worker FROM run_partitions WHERE worker IS NOT NULL
    ON CONFLICT DO NOTHING`);
  await knex.raw(`INSERT INTO run_workers (kind, run_id, worker) SELECT DISTINCT 'migration', migration_id, worker FROM migration_days WHERE worker IS NOT NULL
    ON CONFLICT DO NOTHING`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('run_workers');
}
