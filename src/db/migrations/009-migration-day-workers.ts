import type { Knex } from 'knex';

/**
 * A migration is partitioned by day (each day its own job that any worker takes): the worker
 * ("host:pid") that last took a day, so a migration's view lists its workers like sync history.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('migration_days', (t) => {
    t.string('worker', 200);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('migration_days', (t) => {
    t.dropColumn('worker');
  });
}
