/**
 * The workers ("host:pid") that took part of a run, split or not: written when a worker takes the
 * run, one of its partitions or one of its days, and listed by the run's view and history
 * ("names each worker process that ran a part of the run", CONTRACT §3).
 */
import type { DbOrTrx } from './knex.js';

/** The kinds of run that can be split and taken by several workers (also run_partitions.kind). */
export type RunKind = 'sync' | 'migration' | 'batch-import';

export async function recordRunWorker(db: DbOrTrx, kind: RunKind, runId: string, worker: string): Promise<void> {
  await db('run_workers').insert({ kind, run_id: runId, worker }).onConflict(['kind', 'run_id', 'worker']).ignore();
}

/** Per run id: its workers, sorted (a run no worker has taken yet is absent). */
export async function runWorkersOf(db: DbOrTrx, kind: RunKind, runIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (let i = 0; i < runIds.length; i += 500) {
    const rows = await db('run_workers').where({ kind }).whereIn('run_id', runIds.slice(i, i + 500)).orderBy('worker').select('run_id', 'worker');
    for (const r of rows as { run_id: string; worker: string }[]) {
      const list = out.get(r.run_id) ?? [];
      list.push(r.worker);
      out.set(r.run_id, list);
    }
  }
  return out;
}
