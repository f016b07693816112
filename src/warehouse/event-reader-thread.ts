/**
 * Runs the events sync reader (read, map, validate, serialise) on a worker thread, so that on a
 * multi-core machine it overlaps with the writer committing the previous batch: with SQLite's
 * single writer busy on one core, the reader's CPU work comes nearly for free. Back-pressure by
 * credits: the thread is at most `prefetch` batches ahead, so memory stays a few batches whatever
 * the table's size. An abort of `signal` stops the read (the thread's stream ends, its connector
 * closes) and ends the iteration with WarehouseReadAborted.
 */
import type { Worker } from 'node:worker_threads';
import { WarehouseError, WarehouseReadAborted } from '../../connectors/warehouse.js';
import { prepareEventRows, type PreparedEventBatch } from './event-reader.js';
import { compileEventMapper } from '../domain/warehouse-mapping.js';
import type { ReaderInit, ReaderReply, ReaderRequest } from './event-reader-protocol.js';
import { startModuleWorker } from '../lib/worker-thread.js';

function spawnReader(): Worker {
  return startModuleWorker(import.meta.url, 'event-reader.worker');
}

type Incoming = ReaderReply | { kind: 'exit'; code: number } | { kind: 'crash'; message: string };

export async function* readEventBatchesInThread(init: ReaderInit, signal: AbortSignal, prefetch = 2): AsyncIterable<PreparedEventBatch> {
  const worker = spawnReader();
  const inbox: Incoming[] = [];
  let notify: (() => void) | undefined;
  const push = (m: Incoming) => {
    inbox.push(m);
    notify?.();
  };
  worker.on('message', (m: ReaderReply) => push(m));
  worker.on('error', (err) => push({ kind: 'crash', message: err.message }));
  worker.on('exit', (code) => push({ kind: 'exit', code }));
  const post = (m: ReaderRequest) => worker.postMessage(m);
  const onAbort = () => post({ kind: 'stop' });
  signal.addEventListener('abort', onAbort, { once: true });
  const next = async (): Promise<Incoming> => {
    while (inbox.length === 0) await new Promise<void>((resolve) => (notify = resolve));
    return inbox.shift()!;
  };
  let finished = false;
  let map: ReturnType<typeof compileEventMapper> | undefined;
  try {
    post({ kind: 'init', init });
    post({ kind: 'credit', n: prefetch });
    for (;;) {
      const msg = await next();
      switch (msg.kind) {
        case 'ready':
          continue;
        case 'batch':
          yield msg.batch;
          post({ kind: 'credit', n: 1 });
          continue;
        case 'rows':
          map ??= compileEventMapper(init.plan.mapping);
          yield prepareEventRows(msg.rows, msg.first, init.plan, map);
          post({ kind: 'credit', n: 1 });
          continue;
        case 'done':
          finished = true;
          return;
        case 'aborted':
          finished = true;
          throw new WarehouseReadAborted();
        case 'error':
          finished = true;
          // Source errors keep their kind (a missing column stays permanent); others may retry.
          throw msg.name === 'WarehouseError' ? new WarehouseError(msg.message, msg.retryable ?? false) : new Error(msg.message);
        case 'crash':
          throw new Error(`warehouse reader thread failed: ${msg.message}`);
        case 'exit':
          throw new Error(`warehouse reader thread exited (code ${msg.code}) before the read finished`);
      }
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (!finished) {
      try {
        post({ kind: 'stop' });
      } catch {
        /* already gone */
      }
    }
    await worker.terminate();
  }
}
