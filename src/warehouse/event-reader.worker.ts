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
import { numberedRowBatches, prepareEventRows } from './event-reader.js';
import { compileEventMapper } from '../domain/warehouse-mapping.js';
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
    const rowsOnly = connectorDefinition(init.type)?.costlyClient === true;
    const map = compileEventMapper(init.plan.mapping);
    for await (const { first, rows } of numberedRowBatches(connector, init.plan, { log: quiet, signal: abort.signal })) {
      const reply: ReaderReply = rowsOnly ? { kind: 'rows', first, rows } : { kind: 'batch', batch: prepareEventRows(rows, first, init.plan, map) };
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

send({ kind: 'ready' });
