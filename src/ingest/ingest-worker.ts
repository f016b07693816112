/**
 * Worker-thread entry of the ingest pool: prepares /import batches (events-prepare.ts) and
 * batch-import chunks (batch-chunk.ts).
 */
import { parentPort } from 'node:worker_threads';
import { prepareTask, type TaskInput } from './ingest-tasks.js';
import { ValidationError } from '../lib/errors.js';
import { toPostedRows } from '../store/event-rows.js';

const port = parentPort!;
port.on('message', (msg: { id: number; task: TaskInput }) => {
  try {
    const { rows, ...rest } = prepareTask(msg.task);
    port.postMessage({ id: msg.id, ok: true, result: { ...rest, rows: toPostedRows(rows) } });
  } catch (err) {
    const known = err instanceof ValidationError;
    port.postMessage({
      id: msg.id,
      ok: false,
      error: known ? { status: err.status, message: err.message, details: err.details } : { status: 500, message: String(err) },
    });
  }
});
port.postMessage({ ready: true });
