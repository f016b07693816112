import type { Knex } from 'knex';

/**
 * The listing pages through a workspace's live experiments in the order `created DESC, id`. The
 * (workspace_id, deleted, created) index could not give the `id` tie-break, so both stores sorted
 * every remaining row for each page of 1,000 (Postgres after a scan of the whole table): a
 * listing's cost grew with the square of the workspace (50,000 experiments on Postgres: the
 * pages took 2.1× one query of them all). This index is in
 * the listing's exact order and holds only live rows, so a page reads its own rows and stops.
 * Both SQLite and Postgres take partial indexes with descending columns.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS experiments_live_order ON experiments (workspace_id, created DESC, id) WHERE deleted IS NULL');
  await knex.raw('DROP INDEX IF EXISTS experiments_workspace_live');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS experiments_workspace_live ON experiments (workspace_id, deleted, created)');
  await knex.raw('DROP INDEX IF EXISTS experiments_live_order');
}
