import type { Knex } from 'knex';

/** JSON columns: jsonb on Postgres, text on SQLite. */
function json(t: Knex.CreateTableBuilder, knex: Knex, name: string) {
  return knex.client.config.client === 'pg' ? t.jsonb(name) : t.text(name);
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('experiments', (t) => {
    t.uuid('id').primary();
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.string('name', 255).notNullable();
    t.string('content_type', 32).notNullable().defaultTo('experiment');
    t.text('description');
    t.text('hypothesis');
    t.string('status', 16).notNullable().defaultTo('draft');
    json(t, knex, 'tags').notNullable();
    json(t, knex, 'variants').notNullable();
    json(t, knex, 'metrics').notNullable();
    // The client's settings only; archive state and the decision have their own columns.
    json(t, knex, 'settings').notNullable();
    json(t, knex, 'exposures_cache').notNullable();
    json(t, knex, 'results_cache').notNullable();
    json(t, knex, 'feature_flag');
    json(t, knex, 'decision');
    // Who acted, as they were when they acted: no foreign key, so removing a service account
    // never rewrites or loses an experiment's history.
    t.integer('creator_id');
    t.string('creator_name');
    t.string('creator_email');
    t.integer('last_modified_by_id').notNullable();
    t.string('last_modified_by_name').notNullable();
    t.string('last_modified_by_email');
    t.boolean('is_favorited').notNullable().defaultTo(false);
    t.boolean('is_shared_with_project').notNullable().defaultTo(true);
    t.string('pinned_date', 10); // YYYY-MM-DD
    // Epoch milliseconds, like every other time in this schema.
    t.bigInteger('created').notNullable();
    t.bigInteger('modified').notNullable();
    t.bigInteger('deleted');
    t.bigInteger('start_date');
    t.bigInteger('end_date');
    t.bigInteger('archived_at');
    t.index(['workspace_id', 'deleted', 'created'], 'experiments_workspace_live');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('experiments');
}
