import type { Knex } from 'knex';

/**
 * The SQL event stores' part of the event-store interface (src/store):
 * - `events.device_id`: the device an anonymous event was done on; reads resolve it through
 *   `identity_links` to the device's user (simplified ID merge, resolution at read time).
 * - `identity_links`: device → user per project; the primary key makes the first link win.
 * - The dedupe key is reordered to start with `insert_id`, so the same unique index also serves
 *   mirror updates and deletes by `(project_id, insert_id)` — no second index on the write path.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.string('device_id').nullable();
  });
  await knex.schema.createTable('identity_links', (t) => {
    t.integer('project_id').notNullable();
    t.string('device_id').notNullable();
    t.string('user_id').notNullable();
    t.bigInteger('linked_at').notNullable();
    t.primary(['project_id', 'device_id']);
    t.index(['project_id', 'user_id'], 'identity_links_user');
  });
  await dropDedupe(knex);
  await knex.raw('CREATE UNIQUE INDEX events_dedupe ON events (project_id, insert_id, event, distinct_id, time)');
}

/** Knex made it a constraint on Postgres and a plain unique index on SQLite. */
async function dropDedupe(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') await knex.raw('ALTER TABLE events DROP CONSTRAINT IF EXISTS events_dedupe');
  await knex.raw('DROP INDEX IF EXISTS events_dedupe');
}

export async function down(knex: Knex): Promise<void> {
  await dropDedupe(knex);
  await knex.raw('CREATE UNIQUE INDEX events_dedupe ON events (project_id, event, distinct_id, time, insert_id)');
  await knex.schema.dropTable('identity_links');
  await knex.schema.alterTable('events', (t) => {
    t.dropColumn('device_id');
  });
}
