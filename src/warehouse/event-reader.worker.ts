/**
 * Worker-thread entry of the events sync reader (event-reader-thread.ts is the other side). It
 * opens its own connector, prepares batches and posts them, at most `credits` ahead of the
 * writer; for a connector with a costly client it only reads and posts the rows, and the
 * writer's side prepares them. `stop` aborts the read. The source config arrives by in-process
 * message only.
 */
import { parentPort } from 'node:worker_threads';
import { connectorDefinition, createConnector } from '../../connectors/index.js';
import { WarehouseReadAborted } from '../../connectors/warehouse.js';
import { numberedRowBatches, readEventBatches } from './event-reader.js';
import type { ReaderInit, ReaderReply, ReaderRequest } from './event-reader-protocol.js';

const port = parentPort!;
const abort = new AbortController();
let credits = 0;
let wake: (() => void) | undefined;

const quiet = { info: () => {}, warn: () => {} };

port.on('message', (msg: ReaderRequest) => {
  if (msg.kind === 'init') void run(msg.init);
  else if (msg.kind === 'credit') {
    credits += msg.n;
    wake?.();
  } else if (msg.kind === 'stop') {
    abort.abort();
    wake?.();
  }
});

const send = (reply: ReaderReply) => port.postMessage(reply);

async function run(init: ReaderInit): Promise<void> {
  const connector = createConnector(init.type, init.config, init.settings);
  try {
    const ctx = { log: quiet, signal: abort.signal };
    const replies: AsyncIterable<ReaderReply> = connectorDefinition(init.type)?.costlyClient
      ? map(numberedRowBatches(connector, init.plan, ctx), ({ first, rows }) => ({ kind: 'rows', first, rows }))
      : map(readEventBatches(connector, init.plan, ctx), (batch) => ({ kind: 'batch', batch }));
    for await (const reply of replies) {
      while (credits === 0 && !abort.signal.aborted) await new Promise<void>((resolve) => (wake = resolve));
      if (abort.signal.aborted) break;
      credits -= 1;
      send(reply);
    }
    send({ kind: abort.signal.aborted ? 'aborted' : 'done' });
  } catch (err) {
    if (err instanceof WarehouseReadAborted) send({ kind: 'aborted' });
    else {
      const e = err as Error & { retryable?: boolean };
      send({ kind: 'error', name: e.name ?? 'Error', message: e.message ?? String(err), retryable: e.retryable });
    }
  } finally {
    await connector.close().catch(() => {});
    port.close();
  }
}

async function* map<T, U>(items: AsyncIterable<T>, fn: (item: T) => U): AsyncIterable<U> {
  for await (const item of items) yield fn(item);
}

send({ kind: 'ready' });
