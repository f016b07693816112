/**
 * The ceiling server's worker thread (ceiling-cases.ts): a posted body gunzipped, parsed and
 * turned into the store's input, with nothing checked. What any /import must at least do off
 * the writer's thread.
 */
import { parentPort } from 'node:worker_threads';
import zlib from 'node:zlib';
import { ownsBuffer } from './ceiling-cases.js';
import type { BenchEvent } from './ingest-data.js';
import { copyTextOf, rowBinaryOf, rowsOfEvents, type StoreKind } from './floors.js';

export interface CeilingTask {
  id: number;
  body: Uint8Array;
  kind: StoreKind;
  projectId: number;
  now: number;
}

const port = parentPort!;
port.on('message', (task: CeilingTask) => {
  const rows = rowsOfEvents(JSON.parse(zlib.gunzipSync(task.body).toString('utf8')) as BenchEvent[]);
  if (task.kind === 'sqlite') {
    port.postMessage({ id: task.id, rows });
    return;
  }
  const bytes = task.kind === 'postgres' ? copyTextOf(rows, task.projectId, 'import', task.now) : rowBinaryOf(rows, task.projectId, 'import', task.now);
  port.postMessage({ id: task.id, bytes }, ownsBuffer(bytes) ? [bytes.buffer as ArrayBuffer] : []);
});
