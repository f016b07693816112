import type { Knex } from 'knex';

/**
 * Partitions of a large run (one row per partition of a sync run, a migration or a batch import;
 * `kind` says which): the range it reads, its own lease (`attempts` is the fencing token), its
 * checkpoint and counts, and the worker ("host:pid") that last took it. A run's `worker` column
 * names the worker of an unpartitioned attempt, so history can list workers for every run.
 */
export async function up(knex: Knex): Promise<void> {
  const json = (t: Knex.CreateTableBuilder, name: string) => (knex.client.config.client === 'pg' ? t.jsonb(name) : t.text(name));
  await knex.schema.createTable('run_partitions', (t) => {
    t.string('kind', 24).notNullable(); // sync | migration | batch-import
    t.string('run_id', 64).notNullable();
    t.integer('idx').notNullable(); // 0-based; shown as "partition idx+1 of total"
    t.integer('total').notNullable();
    t.string('status', 16).notNullable(); // queued | running | done | failed
    json(t, 'range').notNullable(); // the kind's range (KeyRange for syncs)
    t.integer('attempts').notNullable().defaultTo(0);
    json(t, 'checkpoint').notNullable();
    json(t, 'counts').notNullable();
    t.string('worker', 200);
    t.text('error');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('started_at');
    t.bigInteger('finished_at');
    t.bigInteger('updated_at').notNullable();
    t.primary(['kind', 'run_id', 'idx']);
  });
  await knex.schema.alterTable('sync_runs', (t) => {
    t.string('worker', 200);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sync_runs', (t) => {
    t.dropColumn('worker');
  });
  await knex.schema.dropTableIfExists('run_partitions');
}
