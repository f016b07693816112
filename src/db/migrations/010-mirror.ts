import type { Knex } from 'knex';

/**
 * Mirror syncs (sync_mode "mirror"): per import, the snapshot of the rows the project holds —
 * each row's key (the insert id of an events table, the user or group id of a profile table),
 * the hash of its content, and the run that last saw it in the warehouse. A run compares each
 * row it reads with the snapshot (new, changed or the same) and at its end deletes what it did
 * not see. The run's counts of updated and deleted rows sit beside the inserted ones.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('mirror_rows', (t) => {
    t.integer('import_id').notNullable();
    t.string('key', 255).notNullable();
    t.string('row_hash', 40).notNullable();
    t.string('seen_run', 64).notNullable();
    t.primary(['import_id', 'key']);
  });
  await knex.schema.alterTable('sync_runs', (t) => {
    t.bigInteger('num_updated').notNullable().defaultTo(0);
    t.bigInteger('num_deleted').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sync_runs', (t) => {
    t.dropColumn('num_updated');
    t.dropColumn('num_deleted');
  });
  await knex.schema.dropTableIfExists('mirror_rows');
}
