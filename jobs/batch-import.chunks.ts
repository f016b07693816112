/**
 * The chunk pipeline both batch-import jobs (whole file, byte-range partition) run: units read
 * from the file are cut into chunks of BATCH_CHUNK_RECORDS; each chunk is prepared — events
 * parsed, validated and serialised on the ingest pool's worker thread, profile records parsed
 * inline — while the chunk before it commits, and chunks commit strictly in file order, each with
 * its checkpoint. At most PREPARED_AHEAD chunks wait beyond the one committing, so memory is
 * bounded whatever the file's size; a prepared chunk counts for nothing until its commit, so a
 * crash still redoes exactly the chunks not committed.
 */
import { findProjectById } from '../src/db/accounts.repo.js';
import { importWorkerCount, ingestWorkerPool } from '../src/ingest/ingest-workers.js';
import { parseChunk, RawChunkBuilder, type RawChunk } from '../src/ingest/batch-chunk.js';
import { BATCH_CHUNK_RECORDS, type ChunkRun, type ReadyChunk } from '../src/ingest/batch-import.chunk.js';
import type { JobContext } from './types.js';

/**
 * Chunks prepared ahead of the one committing. One is enough: two measured no faster (3
 * alternating pairs, 200k events, SQLite and PostgreSQL) for ~30 MB more RSS.
 */
const PREPARED_AHEAD = 1;

/** How a chunk gets ready: the project's ID merge mode is read once, when the run starts. */
export async function chunkPreparer(run: ChunkRun, ctx: JobContext): Promise<(raw: RawChunk) => Promise<ReadyChunk>> {
  if (run.type !== 'events') return async (raw) => parseChunk(raw, run.type);
  const idMerge = (await findProjectById(ctx.db, run.projectId))?.idMerge;
  const pool = ingestWorkerPool(importWorkerCount(ctx.config, ctx.events));
  const stamp = { $import: true, $batch_import_id: run.id };
  return (raw) => pool.prepareChunk({ raw, validate: { strict: run.strict, idMerge, stamp, now: Date.now() }, encoding: ctx.events.rowEncoding });
}

/**
 * `commit` answers undefined to go on, or why the run stops (the pipeline then stops too).
 * Commits run one after another in file order, chained behind the job's reading: while a chunk
 * commits (for PostgreSQL mostly a wait on the server's COPY) the job reads and cuts the next
 * one instead of waiting with it. At most one chunk commits and PREPARED_AHEAD wait beyond it.
 */
export class ChunkPipeline<Stop> {
  private readonly builder: RawChunkBuilder;
  /** Each submitted chunk's commit, oldest first; settled ones are dropped by `cut`. */
  private readonly commits: Promise<Stop | undefined>[] = [];
  private tail: Promise<Stop | undefined> = Promise.resolve(undefined);

  constructor(
    from: number,
    private readonly prepare: (raw: RawChunk) => Promise<ReadyChunk>,
    private readonly commit: (chunk: ReadyChunk) => Promise<Stop | undefined>,
  ) {
    this.builder = new RawChunkBuilder(from);
  }

  addJson(unit: Buffer): void {
    this.builder.addJson(unit);
  }

  addCsv(header: string[], row: string[]): void {
    this.builder.addCsv(header, row);
  }

  /** Whether a chunk's worth of units is collected: time to `cut()`. */
  get full(): boolean {
    return this.builder.units >= BATCH_CHUNK_RECORDS;
  }

  /** Sends the collected units to be prepared and committed; waits while too many are in flight. */
  async cut(): Promise<Stop | undefined> {
    this.submit();
    while (this.commits.length > PREPARED_AHEAD + 1) {
      const stop = await this.commits.shift()!;
      if (stop !== undefined) return stop;
    }
    return undefined;
  }

  /** Cuts what is left and waits for every commit. */
  async finish(): Promise<Stop | undefined> {
    if (this.builder.units > 0) this.submit();
    this.commits.length = 0;
    return this.tail;
  }

  /**
   * Waits until no commit is running, whatever their outcome: a job that stops reading (an
   * error, a bad file) must not report before the chunk still committing has finished.
   */
  async settle(): Promise<void> {
    await this.tail.catch(() => undefined);
  }

  private submit(): void {
    const ready = this.prepare(this.builder.take());
    // A run that stops leaves chunks prepared ahead unawaited: their failure is not the run's.
    ready.catch(() => {});
    // After a stop or a failed commit nothing later commits: the chain passes the outcome on.
    const committed = this.tail.then(async (stop) => stop ?? this.commit(await ready));
    committed.catch(() => {});
    this.commits.push(committed);
    this.tail = committed;
  }
}
