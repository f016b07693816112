/**
 * A small worker-thread pool for the CPU half of /import (inflate, parse, validate, serialise),
 * so the web process's own thread stays free for HTTP and the single SQLite writer. Measured in
 * bench/ingest.bench.ts; INGEST_WORKERS=0 turns it off.
 *
 * Workers start on first use; until one is ready, and whenever one dies mid-task, the batch is
 * prepared inline instead — the pool only ever makes requests faster, never fails them. Workers
 * are unref'd and stop after a minute idle, so tests and CLIs are never held open by them.
 */
import { Worker } from 'node:worker_threads';
import { prepareEventBatch, type PrepareInput, type PreparedBatch } from '../ingest/events-prepare.js';
import { ValidationError } from '../lib/errors.js';

const IDLE_MS = 60_000;

interface Task {
  id: number;
  input: PrepareInput;
  resolve: (r: PreparedBatch) => void;
  reject: (e: unknown) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  task?: Task;
}

type Reply =
  | { ready: true }
  | { id: number; ok: true; result: PreparedBatch }
  | { id: number; ok: false; error: { status: number; message: string; details?: Record<string, unknown> } };

function spawnWorker(): Worker {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./ingest-worker.js', here));
  // Running from TypeScript sources (tsx, vitest): the worker registers tsx before loading its entry.
  const api = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./ingest-worker.ts', here).href;
  return new Worker(`import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`, { eval: true });
}

function runInline(input: PrepareInput): Promise<PreparedBatch> {
  try {
    return Promise.resolve(prepareEventBatch(input));
  } catch (err) {
    return Promise.reject(err);
  }
}

export class IngestWorkerPool {
  private slots: Slot[] = [];
  private queue: Task[] = [];
  private nextId = 1;
  private idleTimer?: NodeJS.Timeout;
  /** Batches prepared on a worker so far (inline ones not counted). */
  completedOnWorkers = 0;

  constructor(readonly size: number) {}

  /** Prepares a batch on a worker when the pool is up, inline otherwise. */
  prepare(input: PrepareInput): Promise<PreparedBatch> {
    if (this.size <= 0) return runInline(input);
    this.cancelIdle();
    if (this.slots.length < this.size) this.start();
    if (!this.slots.some((s) => s.ready)) return runInline(input);
    return new Promise<PreparedBatch>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, input, resolve, reject });
      this.dispatch();
    });
  }

  /** Workers ready to take a batch. */
  get readyWorkers(): number {
    return this.slots.filter((s) => s.ready).length;
  }

  /** Starts the workers and resolves once one is ready (or after `timeoutMs`, ready or not). */
  async warm(timeoutMs = 30_000): Promise<boolean> {
    if (this.size <= 0) return false;
    this.cancelIdle();
    this.start();
    const deadline = Date.now() + timeoutMs;
    while (this.readyWorkers === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (this.queue.length === 0 && this.slots.every((s) => !s.task)) this.scheduleIdle();
    return this.readyWorkers > 0;
  }

  /** Stops every worker; queued and running batches are finished inline. */
  async close(): Promise<void> {
    this.cancelIdle();
    const slots = this.slots;
    this.slots = [];
    for (const s of slots) if (s.task) this.finishInline(s.task);
    for (const t of this.queue.splice(0)) this.finishInline(t);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  private start(): void {
    while (this.slots.length < this.size) {
      const worker = spawnWorker();
      worker.unref();
      const slot: Slot = { worker, ready: false };
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
      this.dispatch();
      return;
    }
    const task = slot.task;
    slot.task = undefined;
    if (task && task.id === msg.id) {
      this.completedOnWorkers += 1;
      if (msg.ok) task.resolve(msg.result);
      else task.reject(new ValidationError(msg.error.status, msg.error.message, msg.error.details));
    }
    this.dispatch();
  }

  private onGone(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i < 0) return;
    this.slots.splice(i, 1);
    if (slot.task) this.finishInline(slot.task);
    // Nothing left to run queued work on: finish it here rather than wait for a new worker.
    if (!this.slots.some((s) => s.ready)) for (const t of this.queue.splice(0)) this.finishInline(t);
  }

  private finishInline(task: Task): void {
    runInline(task.input).then(task.resolve, task.reject);
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.queue.length === 0) break;
      if (!slot.ready || slot.task) continue;
      const task = this.queue.shift()!;
      slot.task = task;
      slot.worker.postMessage({ id: task.id, input: task.input });
    }
    if (this.queue.length === 0 && this.slots.every((s) => !s.task)) this.scheduleIdle();
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

/** The process's one pool of this size (several apps in one process share it). */
export function ingestWorkerPool(size: number): IngestWorkerPool {
  let pool = pools.get(size);
  if (!pool) {
    pool = new IngestWorkerPool(size);
    pools.set(size, pool);
  }
  return pool;
}
