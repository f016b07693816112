import type { Knex } from 'knex';

/**
 * Read-back pages events in (time, id) order (keyset pagination). On SQLite the existing
 * (project_id, time) index already ends in the rowid — which is `id` — so each page is an index
 * range scan in exactly that order. On Postgres it does not: with the tie-break on `id` the
 * planner may fetch the whole remaining range and sort it for every page (quadratic for a big
 * export, seen when statistics are stale). This replaces the Postgres index by one ending in `id`;
 * it serves every query the old one did.
 */
export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw('CREATE INDEX IF NOT EXISTS events_project_time_id ON events (project_id, time, id)');
  await knex.raw('DROP INDEX IF EXISTS events_project_time');
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw('CREATE INDEX IF NOT EXISTS events_project_time ON events (project_id, time)');
  await knex.raw('DROP INDEX IF EXISTS events_project_time_id');
}
