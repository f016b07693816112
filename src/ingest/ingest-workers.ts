/**
 * A small worker-thread pool for the CPU half of /import (inflate, parse, validate, serialise),
 * so the web process's own thread stays free for HTTP and the single SQLite writer; batch-import
 * jobs prepare their next chunk on it while the current one commits. Measured in
 * bench/ingest.bench.ts and bench/batch-import.bench.ts; INGEST_WORKERS=0 turns it off.
 *
 * Workers start on first use; until one is ready, and whenever one dies mid-task, the batch is
 * prepared inline instead — the pool only ever makes requests faster, never fails them. Workers
 * are unref'd and stop after a minute idle, so tests and CLIs are never held open by them.
 */
import type { Worker } from 'node:worker_threads';
import type { PrepareInput, PreparedBatch } from './events-prepare.js';
import type { EventChunkInput, PreparedEventChunk } from './batch-chunk.js';
import { ValidationError } from '../lib/errors.js';
import { prepareTask, type TaskInput, type TaskResult } from './ingest-tasks.js';
import type { EventStore } from '../store/event-store.js';
import { fromPostedRows, type PostedEventRows } from '../store/event-rows.js';
import { startModuleWorker } from '../lib/worker-thread.js';

const IDLE_MS = 60_000;

interface Task {
  id: number;
  task: TaskInput;
  resolve: (r: PreparedBatch | PreparedEventChunk) => void;
  reject: (e: unknown) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  /** Posted to this worker and not yet answered; the worker's port queues them. */
  inflight: Map<number, Task>;
}

/** A result as it crosses the thread boundary (rows in their posted form). */
type Posted<T extends { rows: unknown }> = Omit<T, 'rows'> & { rows: PostedEventRows };

type Reply =
  | { ready: true }
  | { id: number; ok: true; result: Posted<PreparedBatch> | Posted<PreparedEventChunk> }
  | { id: number; ok: false; error: { status: number; message: string; details?: Record<string, unknown> } };

function spawnWorker(): Worker {
  return startModuleWorker(import.meta.url, 'ingest-worker');
}

function runInline(task: TaskInput): Promise<PreparedBatch | PreparedEventChunk> {
  try {
    return Promise.resolve(prepareTask(task));
  } catch (err) {
    return Promise.reject(err);
  }
}

export class IngestWorkerPool {
  private slots: Slot[] = [];
  private nextId = 1;
  private idleTimer?: NodeJS.Timeout;
  /** Batches prepared on a worker so far (inline ones not counted). */
  completedOnWorkers = 0;

  constructor(readonly size: number) {}

  /** Workers ready to take a batch. */
  get readyWorkers(): number {
    return this.slots.filter((s) => s.ready).length;
  }

  /**
   * Prepares a batch on a worker when the pool is up, inline otherwise. A batch is posted to the
   * least busy worker at once rather than held here until a worker is free: the writer thread
   * may be inside a long synchronous insert when a worker finishes, and the worker must not sit
   * idle until that insert ends.
   */
  prepare(input: PrepareInput): Promise<PreparedBatch> {
    return this.run({ kind: 'import', input });
  }

  /** A batch-import chunk of events: parsed, validated and serialised (src/ingest/batch-chunk.ts). */
  prepareChunk(input: EventChunkInput): Promise<PreparedEventChunk> {
    return this.run({ kind: 'chunk', input });
  }

  private run<K extends TaskInput['kind']>(task: Extract<TaskInput, { kind: K }>): Promise<TaskResult[K]> {
    return this.post(task) as Promise<TaskResult[K]>;
  }

  private post(task: TaskInput): Promise<PreparedBatch | PreparedEventChunk> {
    if (this.size <= 0) return runInline(task);
    this.cancelIdle();
    if (this.slots.length < this.size) this.start();
    let slot: Slot | undefined;
    for (const s of this.slots) if (s.ready && (!slot || s.inflight.size < slot.inflight.size)) slot = s;
    if (!slot) return runInline(task);
    const target = slot;
    return new Promise((resolve, reject) => {
      const t: Task = { id: this.nextId++, task, resolve, reject };
      target.inflight.set(t.id, t);
      target.worker.postMessage({ id: t.id, task });
    });
  }

  /** Starts the workers and resolves once one is ready (or after `timeoutMs`, ready or not). */
  async warm(timeoutMs = 30_000): Promise<boolean> {
    if (this.size <= 0) return false;
    this.cancelIdle();
    this.start();
    const deadline = Date.now() + timeoutMs;
    while (this.readyWorkers === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    this.idleCheck();
    return this.readyWorkers > 0;
  }

  /** Stops every worker; batches in flight are finished inline. */
  async close(): Promise<void> {
    this.cancelIdle();
    const slots = this.slots;
    this.slots = [];
    for (const s of slots) for (const t of s.inflight.values()) this.finishInline(t);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  private start(): void {
    while (this.slots.length < this.size) {
      const worker = spawnWorker();
      worker.unref();
      const slot: Slot = { worker, ready: false, inflight: new Map() };
      worker.on('message', (msg: Reply) => this.onReply(slot, msg));
      const gone = () => this.onGone(slot);
      worker.once('error', gone);
      worker.once('exit', gone);
      this.slots.push(slot);
    }
  }

  private onReply(slot: Slot, msg: Reply): void {
    if ('ready' in msg) {
      slot.ready = true;
      return;
    }
    const task = slot.inflight.get(msg.id);
    if (!task) return;
    slot.inflight.delete(msg.id);
    this.completedOnWorkers += 1;
    if (msg.ok) task.resolve({ ...msg.result, rows: fromPostedRows(msg.result.rows) });
    else task.reject(new ValidationError(msg.error.status, msg.error.message, msg.error.details));
    this.idleCheck();
  }

  private onGone(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i < 0) return;
    this.slots.splice(i, 1);
    for (const t of slot.inflight.values()) this.finishInline(t);
    slot.inflight.clear();
  }

  private finishInline(t: Task): void {
    runInline(t.task).then(t.resolve, t.reject);
  }

  private idleCheck(): void {
    if (this.slots.every((s) => s.inflight.size === 0)) this.scheduleIdle();
  }

  private scheduleIdle(): void {
    this.cancelIdle();
    this.idleTimer = setTimeout(() => void this.close(), IDLE_MS);
    this.idleTimer.unref();
  }

  private cancelIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }
}

const pools = new Map<number, IngestWorkerPool>();

/**
 * Workers for /import: INGEST_WORKERS, else by where the time goes — two on ClickHouse (the worker
 * also encodes each row, and the web thread mostly waits for the server: 0.23 → 0.27 of the
 * floor measured), one on SQLite (the writer thread is the bottleneck, so parsing moves off it)
 * and on PostgreSQL (since COPY left the web thread less to do, a worker beat inline parsing in
 * 4 of 4 pairs from outside: +3–13 %).
 */
export function importWorkerCount(config: { INGEST_WORKERS?: number }, events: Pick<EventStore, 'kind'>): number {
  if (config.INGEST_WORKERS !== undefined) return config.INGEST_WORKERS;
  return events.kind === 'clickhouse' ? 2 : 1;
}

/** The process's one pool of this size (several apps in one process share it). */
export function ingestWorkerPool(size: number): IngestWorkerPool {
  let pool = pools.get(size);
  if (!pool) {
    pool = new IngestWorkerPool(size);
    pools.set(size, pool);
  }
  return pool;
}
