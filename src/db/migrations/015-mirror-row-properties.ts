import type { Knex } from 'knex';

/**
 * A profile mirror `$unset`s what a row no longer sets: a key gone from its JSON column, a
 * column dropped from the table. The row hash says only that something changed, so the snapshot
 * also keeps the property names the row set (a JSON array; null for events, and for entries
 * written before this migration, which then unset only the row's null columns until their row
 * next changes).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('mirror_rows', (t) => {
    t.text('prop_keys').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('mirror_rows', (t) => {
    t.dropColumn('prop_keys');
  });
}
