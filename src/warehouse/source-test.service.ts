/**
 * `POST …/warehouse-sources/{id}/test`: what would go wrong at the next sync, said now. Connects
 * (reach rules, credentials), then for each import of the source reads its table or query: the
 * schema (the table exists, the mapped columns exist, full_sync's time column is NOT NULL) and
 * the first rows (the user may SELECT them: a grant missing shows here, not at 3 a.m.). Each
 * problem is the connector's own message, written for the data engineer who fixes it; never a
 * stack trace, never a credential. All good: 200 with the checks; anything wrong: 400 naming it.
 */
import { WarehouseError, type WarehouseConnector } from '../../connectors/warehouse.js';
import { listImports } from '../db/warehouse.repo.js';
import { schemaProblems } from '../domain/warehouse-import.js';
import { ValidationError } from '../lib/errors.js';
import { silentLogger } from '../lib/logger.js';
import { connectorFor, getSource, type SourceDeps } from './sources.service.js';

export interface SourceCheck {
  check: string;
  ok: boolean;
  problem?: string;
}

/** A source error's message; anything else is not ours to show (it may hold internals). */
function problemOf(err: unknown): string {
  if (err instanceof WarehouseError) return err.message;
  return 'the check failed unexpectedly (see the service log)';
}

/** Reads the first rows of `source`, then stops (leaving the loop closes the read): proves the SELECT grant without reading the table. */
async function readFirstRows(c: WarehouseConnector, table: { table: string } | { query: string }): Promise<void> {
  const ctx = { log: silentLogger, signal: new AbortController().signal };
  const spec = { source: table };
  const rows: AsyncIterable<unknown> = c.streamBatches ? c.streamBatches(spec, ctx, 1) : c.stream(spec, ctx);
  for await (const _ of rows) break;
}

export async function testSource(deps: SourceDeps, projectId: number, sourceId: number): Promise<{ ok: true; checks: SourceCheck[] }> {
  const source = await getSource(deps.db, projectId, sourceId);
  const connector = connectorFor(deps, source);
  const checks: SourceCheck[] = [];
  try {
    try {
      await connector.test();
      checks.push({ check: 'connection', ok: true });
    } catch (err) {
      checks.push({ check: 'connection', ok: false, problem: problemOf(err) });
    }
    if (checks[0]!.ok) {
      const imports = (await listImports(deps.db, projectId)).filter((i) => i.sourceId === source.id);
      for (const imp of imports) {
        const params = imp.definition.table_params;
        const check = `import ${imp.id} (${'table' in params ? `table ${params.table}` : 'query'})`;
        try {
          const problems = schemaProblems(imp.definition, await connector.describe(params));
          if (problems.length === 0) await readFirstRows(connector, params);
          checks.push(problems.length ? { check, ok: false, problem: problems.join('; ') } : { check, ok: true });
        } catch (err) {
          checks.push({ check, ok: false, problem: problemOf(err) });
        }
      }
    }
  } finally {
    await connector.close().catch(() => {});
  }
  const failed = checks.filter((c) => !c.ok);
  if (failed.length > 0) throw new ValidationError(400, failed.map((c) => `${c.check}: ${c.problem}`).join('; '), { checks });
  return { ok: true, checks };
}
