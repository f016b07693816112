import type { Knex } from 'knex';

/**
 * `events.distinct_id` holds `$device:<device id>` for anonymous events: up to 263 characters
 * (a device id may have 255), one past PostgreSQL's `varchar(255)` — such an event failed its
 * whole batch. `text` has no length of its own; the ids' limits are the ingest rules'
 * (src/domain/identity.ts, event-record.ts). varchar → text is binary-coercible, so PostgreSQL
 * neither rewrites the table nor rebuilds the dedupe index. SQLite never enforced the length.
 */
export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw('ALTER TABLE events ALTER COLUMN distinct_id TYPE text');
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw('ALTER TABLE events ALTER COLUMN distinct_id TYPE varchar(255)');
}
