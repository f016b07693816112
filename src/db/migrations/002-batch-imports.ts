import type { Knex } from 'knex';

/** JSON columns: jsonb on Postgres, text on SQLite. */
function json(t: Knex.CreateTableBuilder, knex: Knex, name: string) {
  return knex.client.config.client === 'pg' ? t.jsonb(name) : t.text(name);
}

/**
 * Batch import runs. The row exists before the job is enqueued (SQL is the system of record);
 * `records_done` is the checkpoint, committed in the same transaction as the chunk it covers.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('batch_imports', (t) => {
    t.string('id', 36).primary();
    t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.string('type', 8).notNullable(); // events | people | groups
    t.string('format', 8).notNullable(); // ndjson | json | csv
    t.string('compression', 8).notNullable(); // none | gzip
    t.boolean('strict').notNullable().defaultTo(true);
    // Internal: the uploaded file under UPLOAD_DIR. Never returned by the API.
    t.text('file_path').notNullable();
    t.bigInteger('file_bytes').notNullable();
    t.bigInteger('records_total').notNullable();
    t.string('status', 16).notNullable(); // queued | running | succeeded | failed
    t.string('job_id', 80).notNullable();
    t.bigInteger('records_done').notNullable().defaultTo(0);
    t.bigInteger('num_imported').notNullable().defaultTo(0);
    t.bigInteger('num_deduplicated').notNullable().defaultTo(0);
    t.bigInteger('num_rejected').notNullable().defaultTo(0);
    json(t, knex, 'rejected_sample').notNullable();
    json(t, knex, 'log').notNullable();
    t.text('error');
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('created_by', 255);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('started_at');
    t.bigInteger('finished_at');
    t.bigInteger('updated_at').notNullable();
    t.index(['project_id', 'created_at'], 'batch_imports_project_created');
    t.index(['status'], 'batch_imports_status');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('batch_imports');
}
