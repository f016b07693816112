/**
 * Batch imports (docs/job-platform.md): upload a file, get a run id back at once, watch it.
 *
 *   POST /api/app/projects/{pid}/batch-imports?type=events|people|groups[&format=][&strict=]
 *   GET  /api/app/projects/{pid}/batch-imports[?limit=]
 *   GET  /api/app/projects/{pid}/batch-imports/{id}
 *
 * The upload is streamed to UPLOAD_DIR, read through once (structure, CSV header, record count),
 * the run row is created, and only THEN the job is enqueued (SQL first: if Redis is down the
 * reconciler enqueues it later). Owner/admin only.
 */
import { enqueueWithin } from '../../queue/enqueue-deadline.js';
import { batchImportLabel } from '../../queue/job-labels.js';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import express, { type Express, type Request, type Response } from 'express';
import { createBatchImport, findBatchImport, listBatchImports, type BatchImport } from '../../db/batch-imports.repo.js';
import { partitionSummaries, type PartitionSummary } from '../../db/run-partitions.repo.js';
import { runWorkersOf } from '../../db/run-workers.repo.js';
import { percentDone } from '../../runs/board-progress.js';
import { negotiateBatchUpload } from '../../domain/batch-format.js';
import { BatchFileError, fileIsGzipped, inspectBatchFile } from '../../ingest/batch-file.reader.js';
import { errorMessage, NotFoundError, ValidationError } from '../../lib/errors.js';
import { batchImportJobId } from '../../queue/job-ids.js';
import { accessOf, requireProject } from '../auth-middleware.js';
import type { AppDeps } from '../deps.js';
import { requireResidency } from '../ingest-auth.js';
import { integer, type Params } from '../read-back-params.js';
import { surface } from '../surface.js';
import { bodyToFile } from '../request-body.js';
import { isoTimeOrNull } from '../../domain/iso-time.js';

const WRITERS = ['owner', 'admin'] as const;
const ID = /^[0-9a-f-]{36}$/;

/**
 * The public view of a run: no file path, nothing internal. `partitions` {total, done} and
 * `workers` ("host:pid") for a large import split into byte ranges; an unsplit one is one partition.
 */
export function batchImportView(run: BatchImport, parts: PartitionSummary | undefined, workers: string[]) {
  return {
    id: run.id,
    project_id: run.projectId,
    type: run.type,
    format: run.format,
    compression: run.compression,
    strict: run.strict,
    status: run.status,
    job_id: run.jobId,
    percent: percentDone(run.recordsDone, run.recordsTotal),
    records_total: run.recordsTotal,
    records_done: run.recordsDone,
    num_imported: run.imported,
    num_deduplicated: run.deduplicated,
    num_rejected: run.rejected,
    rejected_sample: run.rejectedSample,
    error: run.error,
    attempts: run.attempts,
    file_bytes: run.fileBytes,
    created_by: run.createdBy,
    created: isoTimeOrNull(run.createdAt),
    started: isoTimeOrNull(run.startedAt),
    finished: isoTimeOrNull(run.finishedAt),
    partitions: parts ? { total: parts.total, done: parts.done } : { total: 1, done: run.status === 'succeeded' ? 1 : 0 },
    workers,
    log: run.log,
  };
}

async function batchImportViews(deps: AppDeps, runs: BatchImport[]) {
  const ids = runs.map((r) => r.id);
  const [parts, workers] = await Promise.all([partitionSummaries(deps.db, 'batch-import', ids), runWorkersOf(deps.db, 'batch-import', ids)]);
  return runs.map((r) => batchImportView(r, parts.get(r.id), workers.get(r.id) ?? []));
}

function strictOf(value: unknown): boolean {
  if (value === undefined) return true;
  if (value === '1' || value === 'true') return true;
  if (value === '0' || value === 'false') return false;
  throw new ValidationError(400, "query parameter 'strict' must be 1 or 0");
}

export function mountBatchImports(app: Express, deps: AppDeps): void {
  const router = express.Router({ mergeParams: true });
  router.use(surface('app'));
  router.use(requireProject(deps, (req) => req.params.pid, WRITERS));
  router.use(requireResidency(deps.config.REGION));

  router.post('/', async (req: Request, res: Response) => {
    const access = accessOf(res);
    const decl = negotiateBatchUpload({
      type: req.query.type,
      format: req.query.format,
      contentType: req.headers['content-type'],
      // The file is stored as sent and read later: gzip or none, so the raw header is judged there.
      contentEncoding: req.headers['content-encoding'],
    });
    if (!decl.ok) {
      req.resume();
      throw new ValidationError(decl.status, decl.message);
    }
    const strict = strictOf(req.query.strict);
    const id = crypto.randomUUID();
    const file = path.resolve(deps.config.UPLOAD_DIR, String(access.project.id), `${id}.upload`);
    const bytes = await bodyToFile(req, file, { maxBytes: deps.config.BATCH_IMPORT_MAX_BYTES });
    let records: number;
    try {
      if (bytes === 0) throw new ValidationError(400, 'the upload is empty');
      if (decl.declaredGzip && !fileIsGzipped(file)) throw new ValidationError(400, 'the body was declared gzip but is not gzip');
      ({ records } = await inspectBatchFile(file, decl.type, decl.format, { maxBytes: deps.config.BATCH_IMPORT_MAX_BYTES, maxRecordBytes: deps.config.BATCH_IMPORT_MAX_RECORD_BYTES }));
      if (records === 0) throw new ValidationError(400, 'the file holds no records');
    } catch (err) {
      fs.rmSync(file, { force: true });
      if (err instanceof BatchFileError) throw new ValidationError(err.status, err.message);
      throw err;
    }
    const jobId = batchImportJobId(id);
    const run = await createBatchImport(deps.db, {
      id,
      projectId: access.project.id,
      type: decl.type,
      format: decl.format,
      compression: fileIsGzipped(file) ? 'gzip' : 'none',
      strict,
      filePath: file,
      fileBytes: bytes,
      recordsTotal: records,
      jobId,
      createdBy: access.serviceAccount?.username ?? 'project secret',
      now: Date.now(),
    });
    try {
      await enqueueWithin(deps.queues.enqueue('batch-import', { importId: id }, { jobId, label: batchImportLabel(access.project.id, id) }));
    } catch (err) {
      // The run is in SQL; the reconciler enqueues it once Redis answers again.
      deps.log.warn({ reqId: res.locals.reqId, importId: id, err: errorMessage(err) }, 'batch import not enqueued yet');
    }
    deps.log.info({ reqId: res.locals.reqId, importId: id, projectId: access.project.id, records, bytes }, 'batch import queued');
    res.status(202).json({ status: 'ok', results: batchImportView(run, undefined, []) });
  });

  router.get('/', async (req: Request, res: Response) => {
    const limit = integer(req.query as Params, 'limit', { min: 1, max: 200, default: 50 })!;
    const runs = await listBatchImports(deps.db, accessOf(res).project.id, limit);
    res.json({ status: 'ok', results: await batchImportViews(deps, runs) });
  });

  router.get('/:id', async (req: Request, res: Response) => {
    const id = String(req.params.id);
    const run = ID.test(id) ? await findBatchImport(deps.db, id) : undefined;
    if (!run || run.projectId !== accessOf(res).project.id) throw new NotFoundError(`batch import ${id} not found`);
    res.json({ status: 'ok', results: (await batchImportViews(deps, [run]))[0] });
  });

  app.use('/api/app/projects/:pid/batch-imports', router);
}

