/**
 * Worker-thread entry of the migration decoder pool (decoder-threads.ts): decodes one window at
 * a time, posting batches while it holds credit (at most DECODE_AHEAD ahead of the writer).
 */
import { parentPort } from 'node:worker_threads';
import { DECODE_AHEAD, type FromThread, type ToThread } from './decoder-threads.js';
import { decodeWindow } from './window-decoder.js';

const port = parentPort!;
let current: { id: number; credit: number; wake?: () => void; abort: AbortController } | undefined;

const send = (msg: FromThread) => port.postMessage(msg);

async function run(id: number, req: Extract<ToThread, { type: 'decode' }>['req']): Promise<void> {
  const job = { id, credit: DECODE_AHEAD, wake: undefined as (() => void) | undefined, abort: new AbortController() };
  current = job;
  try {
    for await (const batch of decodeWindow(req, job.abort.signal)) {
      while (job.credit <= 0 && !job.abort.signal.aborted) await new Promise<void>((resolve) => (job.wake = resolve));
      if (job.abort.signal.aborted) break;
      job.credit -= 1;
      send({ type: 'batch', id, batch });
    }
    send({ type: 'done', id });
  } catch (err) {
    send({ type: 'error', id, message: err instanceof Error ? err.message : String(err) });
  } finally {
    if (current === job) current = undefined;
  }
}

port.on('message', (msg: ToThread) => {
  if (msg.type === 'decode') {
    void run(msg.id, msg.req);
    return;
  }
  if (!current || current.id !== msg.id) return;
  if (msg.type === 'credit') current.credit += 1;
  else current.abort.abort();
  current.wake?.();
});
send({ type: 'ready' });
