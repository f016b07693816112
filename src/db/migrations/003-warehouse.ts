import type { Knex } from 'knex';

/** JSON columns: jsonb on Postgres, text on SQLite. */
function json(t: Knex.CreateTableBuilder, knex: Knex, name: string) {
  return knex.client.config.client === 'pg' ? t.jsonb(name) : t.text(name);
}

/**
 * Warehouse connector: sources (credentials sealed with SECRETS_KEY), imports (the mapping and
 * the time_based watermark) and sync runs (the system of record for every sync job).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('warehouse_sources', (t) => {
    t.increments('id').primary();
    t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.string('type', 16).notNullable(); // sqlite | postgres | snowflake
    t.string('name').notNullable();
    // AES-GCM sealed JSON of the connection config. Never returned, logged or queued.
    t.text('config_sealed').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['project_id'], 'warehouse_sources_project');
  });

  await knex.schema.createTable('warehouse_imports', (t) => {
    t.increments('id').primary();
    t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.integer('source_id').notNullable().references('warehouse_sources.id').onDelete('CASCADE');
    t.string('import_type', 16).notNullable(); // events | people | groups | lookup_table
    t.string('sync_mode', 16).notNullable(); // time_based | full_sync | one_time
    t.string('schedule', 120).notNullable(); // hourly | daily | weekly | api_only | cron expression
    t.boolean('paused').notNullable().defaultTo(false);
    // The whole import definition in Mixpanel's field names (table_params and the column mapping).
    json(t, knex, 'definition').notNullable();
    // time_based: the greatest insert-time value of the last committed run, as JSON.
    t.text('watermark');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['project_id'], 'warehouse_imports_project');
  });

  await knex.schema.createTable('sync_runs', (t) => {
    t.string('id', 36).primary();
    t.integer('import_id').notNullable().references('warehouse_imports.id').onDelete('CASCADE');
    t.integer('project_id').notNullable();
    t.string('trigger', 16).notNullable(); // manual | scheduled
    // Scheduled runs: the epoch ms of the schedule slot this run is for (null for manual runs).
    t.bigInteger('slot');
    t.string('status', 16).notNullable(); // QUEUED | RUNNING | SUCCEEDED | FAILED | CANCELLED
    t.string('job_id', 80).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.bigInteger('rows_total'); // COUNT(*) estimate, for progress
    t.bigInteger('rows_read').notNullable().defaultTo(0);
    t.bigInteger('rows_skipped').notNullable().defaultTo(0);
    t.bigInteger('num_imported').notNullable().defaultTo(0);
    t.bigInteger('num_deduplicated').notNullable().defaultTo(0);
    // Committed with every batch: { offset, maxInsertTime, samples }.
    json(t, knex, 'checkpoint').notNullable();
    json(t, knex, 'log').notNullable();
    t.text('error');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('started_at');
    t.bigInteger('finished_at');
    t.bigInteger('updated_at').notNullable();
    // One run per import and schedule slot: two schedulers firing the same slot insert once.
    t.unique(['import_id', 'slot'], { indexName: 'sync_runs_import_slot' });
    t.index(['import_id', 'created_at'], 'sync_runs_import_created');
    t.index(['status'], 'sync_runs_status');
  });
  // At most one QUEUED or RUNNING run per import: a second trigger finds the first instead of
  // starting another, even when two requests race.
  await knex.raw(`CREATE UNIQUE INDEX sync_runs_one_active ON sync_runs (import_id) WHERE status IN ('QUEUED', 'RUNNING')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('sync_runs');
  await knex.schema.dropTableIfExists('warehouse_imports');
  await knex.schema.dropTableIfExists('warehouse_sources');
}
