import type { Knex } from 'knex';

/** JSON columns: jsonb on Postgres, text on SQLite. */
function json(t: Knex.CreateTableBuilder, knex: Knex, name: string) {
  return knex.client.config.client === 'pg' ? t.jsonb(name) : t.text(name);
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('projects', (t) => {
    t.increments('id').primary();
    t.string('name').notNullable();
    t.string('token', 64).notNullable().unique();
    // sha256 of the random project secret: high-entropy, so a fast hash is enough and lets the
    // secret be looked up directly when sent as a Basic username.
    t.string('api_secret_hash', 64).notNullable().unique();
    t.string('residency', 2).notNullable().defaultTo('US');
    t.string('id_merge', 16).notNullable().defaultTo('simplified');
    t.bigInteger('created_at').notNullable();
  });
  await knex.schema.createTable('workspaces', (t) => {
    t.increments('id').primary();
    t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.string('name').notNullable();
    t.boolean('is_default').notNullable().defaultTo(false);
    t.index(['project_id']);
  });
  await knex.schema.createTable('service_accounts', (t) => {
    t.increments('id').primary();
    t.string('username').notNullable().unique();
    t.string('secret_hash').notNullable();
    t.string('email');
    t.bigInteger('created_at').notNullable();
  });
  await knex.schema.createTable('service_account_roles', (t) => {
    t.integer('service_account_id').notNullable().references('service_accounts.id').onDelete('CASCADE');
    t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.string('role', 16).notNullable();
    t.primary(['service_account_id', 'project_id']);
  });

  await knex.schema.createTable('events', (t) => {
    t.bigIncrements('id').primary();
    t.integer('project_id').notNullable();
    t.string('event').notNullable();
    t.string('distinct_id').notNullable();
    t.bigInteger('time').notNullable(); // epoch milliseconds
    t.string('insert_id', 36).notNullable();
    json(t, knex, 'properties').notNullable();
    t.string('source', 32).notNullable();
    t.bigInteger('ingested_at').notNullable();
    // Dedupe is enforced here, at write time and permanently.
    t.unique(['project_id', 'event', 'distinct_id', 'time', 'insert_id'], { indexName: 'events_dedupe' });
    t.index(['project_id', 'time'], 'events_project_time');
  });

  await knex.schema.createTable('profiles', (t) => {
    t.integer('project_id').notNullable();
    t.string('distinct_id').notNullable();
    json(t, knex, 'properties').notNullable();
    // Per-property time of the last $set, so a replayed or out-of-order older $set never wins.
    json(t, knex, 'property_times').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.primary(['project_id', 'distinct_id']);
  });
  await knex.schema.createTable('group_profiles', (t) => {
    t.integer('project_id').notNullable();
    t.string('group_key').notNullable();
    t.string('group_id').notNullable();
    json(t, knex, 'properties').notNullable();
    json(t, knex, 'property_times').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.primary(['project_id', 'group_key', 'group_id']);
  });

  await knex.schema.createTable('lookup_tables', (t) => {
    t.increments('id').primary();
    t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.string('name').notNullable();
    // The event property whose value is this table's key; read-back joins the row in.
    t.string('mapped_property');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('replaced_at');
    t.unique(['project_id', 'name']);
  });
  await knex.schema.createTable('lookup_rows', (t) => {
    t.integer('lookup_table_id').notNullable().references('lookup_tables.id').onDelete('CASCADE');
    t.string('key').notNullable();
    json(t, knex, 'properties').notNullable();
    t.primary(['lookup_table_id', 'key']);
  });

  await knex.schema.createTable('usage', (t) => {
    t.integer('project_id').notNullable();
    t.string('month', 7).notNullable(); // YYYY-MM (UTC)
    t.string('source', 32).notNullable();
    t.bigInteger('events').notNullable().defaultTo(0);
    t.primary(['project_id', 'month', 'source']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'usage',
    'lookup_rows',
    'lookup_tables',
    'group_profiles',
    'profiles',
    'events',
    'service_account_roles',
    'service_accounts',
    'workspaces',
    'projects',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
