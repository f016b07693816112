/**
 * Helpers for warehouse connector tests: the app API calls a user would make, and running a
 * sync run's handler directly with a real JobContext (progress and log lines recorded).
 */
import { eventStoreOf } from './events.js';
import { storeOutageCheck } from '../../src/store/store-outage.js';
import type { Config } from '../../config/index.js';
import { runWarehouseSync, type SyncOutcome } from '../../jobs/warehouse-sync.handler.js';
import type { JobContext } from '../../jobs/types.js';
import type { Db } from '../../src/db/knex.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../../src/lib/secrets.js';
import type { JobQueues } from '../../src/queue/queues.js';

export interface Api {
  url: string;
  basic: string;
  projectId: number;
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
}

export async function call<T = any>(api: Api, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
  const res = await fetch(`${api.url}/api/app/projects/${api.projectId}/warehouse-sources${path}`, {
    method,
    headers: {
      authorization: api.basic,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, body: parsed as T };
}

/** POST a source and an import; returns the import id (throws with the body on a non-200). */
export async function createSourceAndImport(api: Api, sourceBody: unknown, importBody: Record<string, unknown>): Promise<{ sourceId: number; importId: number }> {
  const src = await call(api, 'POST', '', sourceBody);
  if (src.status !== 200) throw new Error(`create source: ${src.status} ${JSON.stringify(src.body)}`);
  const imp = await call(api, 'POST', '/imports', { warehouse_source_id: src.body.results.id, ...importBody });
  if (imp.status !== 200) throw new Error(`create import: ${imp.status} ${JSON.stringify(imp.body)}`);
  return { sourceId: src.body.results.id, importId: imp.body.results.id };
}

export async function manualSync(api: Api, importId: number): Promise<{ run_id: string; job_id: string }> {
  const res = await call(api, 'PUT', `/imports/${importId}/manual-sync`);
  if (res.status !== 200) throw new Error(`manual-sync: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.results;
}

export async function history(api: Api, importId: number): Promise<any[]> {
  const res = await call(api, 'GET', `/imports/${importId}/history`);
  if (res.status !== 200) throw new Error(`history: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.results.runs;
}

export interface RecordingContext extends JobContext {
  progressValues: unknown[];
  lines: string[];
}

/** A JobContext like the worker runtime builds, over the given db/config/queues. */
export function jobContext(
  db: Db,
  config: Config,
  queues: JobQueues,
  overrides: Partial<Pick<JobContext, 'signal' | 'attempt' | 'jobId'>> = {},
): RecordingContext {
  const progressValues: unknown[] = [];
  const lines: string[] = [];
  const events = eventStoreOf(db);
  return {
    db,
    events,
    storeOutage: storeOutageCheck(db, events),
    log: silentLogger,
    config,
    secrets: createSecretBox(secretsKeyFrom(config.SECRETS_KEY)),
    queues,
    signal: overrides.signal ?? new AbortController().signal,
    attempt: overrides.attempt ?? 1,
    jobId: overrides.jobId ?? 'test-job',
    progress: async (v) => void progressValues.push(v),
    logLine: async (l) => void lines.push(l),
    progressValues,
    lines,
  };
}

/** Runs the handler of a run the way a worker would (first attempt unless told otherwise). */
export function runSync(db: Db, config: Config, queues: JobQueues, runId: string, jobId: string): Promise<SyncOutcome> {
  return runWarehouseSync(runId, jobContext(db, config, queues, { jobId }));
}

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

/** Polls the history until the run is SUCCEEDED, FAILED or CANCELLED; returns its history entry. */
export async function waitForRun(api: Api, importId: number, runId: string, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = (await history(api, importId)).find((r) => r.run_id === runId);
    if (run && TERMINAL.has(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} not finished within ${timeoutMs} ms: ${JSON.stringify(run)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Triggers a manual sync and waits for a worker to finish it. */
export async function syncAndWait(api: Api, importId: number, timeoutMs?: number): Promise<any> {
  const { run_id } = await manualSync(api, importId);
  return waitForRun(api, importId, run_id, timeoutMs);
}
