/**
 * Runs window decoding (window-decoder.ts) on worker threads, so a migration's parsing and
 * transforming happen beside the writes on the process's own thread instead of between them.
 *
 * Threads are kept in a small per-process pool (starting one under tsx costs a second), unref'd
 * and stopped after a minute idle. Flow control: a thread decodes at most DECODE_AHEAD batches
 * ahead of the commit being written, so memory stays bounded whatever the archive's size; the
 * writer commits every batch that is ready at once, so commits grow when it falls behind. A
 * thread goes back to the pool as soon as it has decoded its window, while that window's last
 * batches may still wait to be written; a window that finds every thread busy waits for one
 * (more days run at once than there are threads: MIGRATION_DAY_CONCURRENCY), so decoding never
 * lands on the writer's thread. When threads are off (`MIGRATION_DECODE_THREADS=0`) or one cannot
 * start, decoding happens inline; a thread that dies fails the attempt, which resumes from its
 * checkpoint.
 */
import type { Worker } from 'node:worker_threads';
import { RetryableError } from '../lib/errors.js';
import { decodeWindow, mergeBatches, type DecodedBatch, type DecodeRequest } from './window-decoder.js';
import { startModuleWorker } from '../lib/worker-thread.js';

const IDLE_MS = 60_000;
/** Batches a thread may decode ahead of the commit being written (which takes every one ready). */
export const DECODE_AHEAD = 4;

export type ToThread = { type: 'decode'; id: number; req: DecodeRequest } | { type: 'credit'; id: number } | { type: 'cancel'; id: number };
export type FromThread =
  | { type: 'ready' }
  | { type: 'batch'; id: number; batch: DecodedBatch }
  | { type: 'done'; id: number }
  | { type: 'error'; id: number; message: string };

/**
 * A decoder's live data is at most DECODE_AHEAD + 1 batches; capping its heap makes V8 collect
 * early instead of letting the heap (and the process's RSS) grow with the volume decoded.
 */
const THREAD_LIMITS = { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 16 };

function spawnThread(): Worker {
  return startModuleWorker(import.meta.url, 'window-decoder.worker', { resourceLimits: THREAD_LIMITS });
}

interface Thread {
  worker: Worker;
  ready: Promise<boolean>;
  busy: boolean;
  dead: boolean;
  idleTimer?: NodeJS.Timeout;
}

const pool: Thread[] = [];
let nextId = 1;

function startThread(): Thread {
  const worker = spawnThread();
  worker.unref();
  const t: Thread = { worker, busy: false, dead: false, ready: Promise.resolve(false) };
  t.ready = new Promise<boolean>((resolve) => {
    const onMessage = (msg: FromThread) => {
      if (msg.type === 'ready') {
        worker.off('message', onMessage);
        resolve(true);
      }
    };
    worker.on('message', onMessage);
    const gone = () => {
      t.dead = true;
      leavePool(t);
      resolve(false);
    };
    worker.once('error', gone);
    worker.once('exit', gone);
  });
  pool.push(t);
  return t;
}

/** Windows waiting for a thread of a full pool, first come first served. */
const waiting: (() => void)[] = [];

/** A thread was freed or left the pool: the first waiting window looks again. */
function wakeOne(): void {
  waiting.shift()?.();
}

function leavePool(t: Thread): void {
  const i = pool.indexOf(t);
  if (i >= 0) pool.splice(i, 1);
  wakeOne();
}

/** A free thread of the pool (started when there are fewer than `max`); undefined if aborted or one cannot start. */
async function acquire(max: number, signal: AbortSignal): Promise<Thread | undefined> {
  for (;;) {
    if (signal.aborted) return undefined;
    let t = pool.find((p) => !p.busy && !p.dead);
    if (!t && pool.length < max) t = startThread();
    if (t) {
      t.busy = true;
      clearTimeout(t.idleTimer);
      if (!(await t.ready)) return undefined;
      return t;
    }
    // Every thread is decoding: wait for one rather than decode on the writer's thread. A thread
    // frees as soon as it has decoded its window, not when that window is written, so this
    // window's decoding overlaps the writes of the windows before it.
    await new Promise<void>((resolve) => {
      const wake = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = waiting.indexOf(wake);
        if (i >= 0) waiting.splice(i, 1);
        resolve();
      };
      waiting.push(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function release(t: Thread): void {
  t.busy = false;
  t.idleTimer = setTimeout(() => void t.worker.terminate(), IDLE_MS);
  t.idleTimer.unref();
  wakeOne();
}

/** Decodes a window on a pool thread (at most `maxThreads` of them), or inline. */
export async function* decodeWindowOffThread(req: DecodeRequest, signal: AbortSignal, maxThreads: number): AsyncGenerator<DecodedBatch> {
  const t = maxThreads > 0 ? await acquire(maxThreads, signal) : undefined;
  if (!t) {
    signal.throwIfAborted();
    yield* decodeWindow(req, signal);
    return;
  }
  const id = nextId++;
  const inbox: FromThread[] = [];
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  const detach = () => {
    t.worker.off('message', onMessage);
    t.worker.off('exit', onGone);
  };
  // Set once the thread has sent its last message for this window (done or error): it goes back
  // to the pool at once, while the batches it decoded may still wait in the inbox to be written.
  let freed = false;
  const onMessage = (msg: FromThread) => {
    if ('id' in msg && msg.id !== id) return;
    inbox.push(msg);
    if (msg.type === 'done' || msg.type === 'error') {
      freed = true;
      detach();
      release(t);
    }
    wake?.();
  };
  const onGone = () => {
    failure = new RetryableError('the migration decoder thread died; the day resumes from its checkpoint');
    wake?.();
  };
  const onAbort = () => wake?.();
  t.worker.on('message', onMessage);
  t.worker.once('exit', onGone);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    t.worker.postMessage({ type: 'decode', id, req } satisfies ToThread);
    for (;;) {
      signal.throwIfAborted();
      if (failure) throw failure;
      const msg = inbox.shift();
      if (!msg) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      if (msg.type === 'error') throw new Error(msg.message);
      if (msg.type === 'done') return;
      if (msg.type === 'batch') {
        // Every batch already decoded goes into one commit, and the thread gets its credit back
        // before the commit, so it decodes on while the writer writes.
        const ready = [msg.batch];
        while (!ready[ready.length - 1]!.end && inbox[0]?.type === 'batch') ready.push((inbox.shift() as Extract<FromThread, { type: 'batch' }>).batch);
        for (let i = 0; i < ready.length; i++) t.worker.postMessage({ type: 'credit', id } satisfies ToThread);
        yield mergeBatches(ready);
      }
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    // Not freed: the thread died, or this window stopped early (abort, error, consumer gone) and
    // the thread may be mid-batch, so it is replaced.
    if (!freed) {
      detach();
      if (!t.dead) {
        leavePool(t);
        void t.worker.terminate();
      }
    }
  }
}
