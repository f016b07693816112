/**
 * Historical migrations (the migration service, not schema migrations): one parent row per run,
 * one row per exported day with its status, checkpoint and counts, and a staging table holding
 * each user's latest user properties until the run applies them as profile `$set`s.
 */
import type { Knex } from 'knex';

function json(t: Knex.CreateTableBuilder, knex: Knex, name: string) {
  return knex.client.config.client === 'pg' ? t.jsonb(name) : t.text(name);
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('migrations', (t) => {
    t.string('id', 36).primary();
    t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.string('source_tool', 32).notNullable();
    // sha256 of the source API key: recognises a re-post of the same migration without the key.
    t.string('source_key_hash', 64).notNullable();
    // AES-GCM sealed {apiKey, apiSecret}; never returned, logged or put in a job payload.
    t.text('credentials').notNullable();
    t.string('source_region', 2).notNullable();
    t.string('start_date', 10).notNullable();
    t.string('end_date', 10).notNullable();
    t.boolean('dry_run').notNullable();
    t.string('status', 16).notNullable(); // queued | running | succeeded | failed
    t.string('phase', 16).notNullable(); // count | load | finalize | done
    t.integer('days_total').notNullable();
    // Records in the export, known once every day is counted.
    t.bigInteger('events_counted');
    t.bigInteger('profiles_set').notNullable().defaultTo(0);
    // Finalize applies staged profiles in distinct_id order; this is the last one applied.
    t.string('profiles_cursor', 255);
    t.text('error');
    json(t, knex, 'log').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('started_at');
    t.bigInteger('finished_at');
    t.bigInteger('updated_at').notNullable();
    t.index(['project_id', 'created_at'], 'migrations_project_created');
    t.index(['status'], 'migrations_status');
  });

  await knex.schema.createTable('migration_days', (t) => {
    t.string('migration_id', 36).notNullable().references('migrations.id').onDelete('CASCADE');
    t.string('day', 10).notNullable();
    t.string('status', 16).notNullable(); // queued | counting | counted | loading | done
    // The export windows of the day: the whole day, or 24 hours when the day is too large.
    json(t, knex, 'windows');
    t.bigInteger('events_counted');
    // Load position: windows and archive entries finished, and lines done in the current entry.
    json(t, knex, 'checkpoint');
    // Bumped by every committed batch; a commit expecting another value was superseded by a
    // second copy of the job (a lost lock) and rolls back, so counts are never added twice.
    t.integer('seq').notNullable().defaultTo(0);
    t.bigInteger('events_read').notNullable().defaultTo(0);
    t.bigInteger('events_loaded').notNullable().defaultTo(0);
    t.bigInteger('events_deduplicated').notNullable().defaultTo(0);
    t.bigInteger('events_rejected').notNullable().defaultTo(0);
    json(t, knex, 'rejections').notNullable();
    t.text('error');
    t.bigInteger('updated_at').notNullable();
    t.primary(['migration_id', 'day']);
  });

  await knex.schema.createTable('migration_user_props', (t) => {
    t.string('migration_id', 36).notNullable().references('migrations.id').onDelete('CASCADE');
    t.string('distinct_id', 255).notNullable();
    t.bigInteger('time').notNullable();
    // Canonical JSON text on both dialects: ties at equal times compare it as a string.
    t.text('properties').notNullable();
    t.primary(['migration_id', 'distinct_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('migration_user_props');
  await knex.schema.dropTableIfExists('migration_days');
  await knex.schema.dropTableIfExists('migrations');
}
