/**
 * Child-process entry of the SQLite source (the parent is sqlite.connector.ts): runs requests one
 * at a time with SqliteReader and posts the answers; a stream posts batches while the parent
 * grants credits. It exits when the parent goes away or after a minute without work; the parent
 * SIGKILLs it on abort or deadline, whatever native code it is in.
 */
import { SqliteReader } from './sqlite-reader.js';
import type { FromChild, ToChild } from './sqlite-child-protocol.js';

let credits = 0;
let wake: (() => void) | undefined;
const send = (m: FromChild) => new Promise<void>((resolve) => process.send!(m, undefined, {}, () => resolve()));

const IDLE_EXIT_MS = 60_000;
let idle: NodeJS.Timeout | undefined;
const idleAgain = () => {
  clearTimeout(idle);
  idle = setTimeout(() => process.exit(0), IDLE_EXIT_MS);
};

process.on('disconnect', () => process.exit(0));
process.on('message', (msg: ToChild) => {
  if (msg.kind === 'credit') {
    credits += msg.n;
    wake?.();
  } else if (msg.kind === 'start') {
    clearTimeout(idle);
    void run(msg).then(idleAgain);
  }
});
idleAgain();

async function run(msg: Extract<ToChild, { kind: 'start' }>): Promise<void> {
  try {
    const reader = new SqliteReader({ path: msg.path }, msg.pathSettings);
    const r = msg.request;
    if (r.op === 'test') await send({ kind: 'result', value: reader.test() });
    else if (r.op === 'describe') await send({ kind: 'result', value: reader.describe(r.source) });
    else if (r.op === 'count') await send({ kind: 'result', value: reader.count(r.spec) });
    else if (r.op === 'splitPoints') await send({ kind: 'result', value: reader.splitPoints(r.spec, r.column, r.every) });
    else {
      for (const rows of reader.batches(r.spec, r.size)) {
        while (credits === 0) await new Promise<void>((resolve) => (wake = resolve));
        credits -= 1;
        await send({ kind: 'batch', rows });
      }
      await send({ kind: 'done' });
    }
  } catch (err) {
    const e = err as Error & { retryable?: boolean };
    await send({ kind: 'error', name: e.name ?? 'Error', message: e.message ?? String(err), retryable: e.retryable });
  }
  credits = 0;
}
