/** Worker-thread entry of the ingest pool: prepares /import batches (see events-prepare.ts). */
import { parentPort } from 'node:worker_threads';
import { prepareEventBatch, type PrepareInput } from '../ingest/events-prepare.js';
import { ValidationError } from '../lib/errors.js';
import { toPostedRows } from '../store/event-rows.js';

const port = parentPort!;
port.on('message', (msg: { id: number; input: PrepareInput }) => {
  try {
    const { rows, ...rest } = prepareEventBatch(msg.input);
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
