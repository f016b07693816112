import type { Knex } from 'knex';

/**
 * The worker ("host:pid") that last took an unsplit batch import, so its view lists a worker as
 * sync history and migrations do (a split import lists its partitions' workers).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('batch_imports', (t) => {
    t.string('worker', 200);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('batch_imports', (t) => {
    t.dropColumn('worker');
  });
}
