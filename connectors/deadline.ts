/**
 * Every warehouse read runs against a deadline (WAREHOUSE_READ_TIMEOUT_MS): a connection test, a
 * schema lookup, a count, and each next batch of a stream must answer within it. Beyond it the
 * read is aborted — the connector cancels the statement on the server (pg_cancel_backend, KILL
 * QUERY, Snowflake's cancel) or kills the SQLite reader process — and the caller gets a
 * permanent WarehouseError: a query that slow is not fixed by running it again, so the run fails
 * instead of retrying (and freezing nothing meanwhile). The connector itself is unchanged; this
 * wraps it (connectors/index.ts does, for every type).
 */
import { WarehouseError, type ConnectorContext, type ReadSpec, type Row, type TableRef, type WarehouseConnector } from './warehouse.js';

export class WarehouseDeadlineExceeded extends WarehouseError {
  constructor(what: string, ms: number) {
    const limit = ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
    super(
      `${what} took longer than ${limit} (WAREHOUSE_READ_TIMEOUT_MS) and was cancelled; simplify the query or the table's view, or ask the operator to raise the limit`,
      false,
    );
    this.name = 'WarehouseError';
  }
}

/** `work` raced against the deadline; on expiry `onExpiry` runs (cancel the work) and the deadline error is thrown. */
async function race<T>(work: Promise<T>, ms: number, what: string, onExpiry: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onExpiry();
      reject(new WarehouseDeadlineExceeded(what, ms));
    }, ms);
  });
  // The losing side may still settle later: never as an unhandled rejection.
  work.catch(() => {});
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** An AbortController aborted with `outer` too (shutdown still stops the read). */
function linked(outer: AbortSignal): { controller: AbortController; unlink: () => void } {
  const controller = new AbortController();
  const forward = () => controller.abort();
  if (outer.aborted) controller.abort();
  else outer.addEventListener('abort', forward, { once: true });
  return { controller, unlink: () => outer.removeEventListener('abort', forward) };
}

/** A one-shot read that takes a signal: aborted (cancelled in the source) at the deadline. */
async function cancellable<T>(ctx: ConnectorContext, ms: number, what: string, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const { controller, unlink } = linked(ctx.signal);
  try {
    return await race(run(controller.signal), ms, what, () => controller.abort());
  } finally {
    unlink();
  }
}

async function* bounded<T>(open: (signal: AbortSignal) => AsyncIterable<T>, ctx: ConnectorContext, ms: number): AsyncIterable<T> {
  const { controller, unlink } = linked(ctx.signal);
  const it = open(controller.signal)[Symbol.asyncIterator]();
  let finished = false;
  try {
    for (;;) {
      const r = await race(it.next(), ms, 'reading from the source', () => controller.abort());
      if (r.done) {
        finished = true;
        return;
      }
      yield r.value;
    }
  } finally {
    unlink();
    // Closing after an expiry must not wait for a statement that is being cancelled.
    if (!finished) void Promise.resolve(it.return?.()).catch(() => {});
  }
}

export function withReadDeadline(c: WarehouseConnector, ms: number): WarehouseConnector {
  const wrapped: WarehouseConnector = {
    type: c.type,
    test: () => race(c.test(), ms, 'the connection test', () => void c.close().catch(() => {})),
    describe: (source: TableRef) => race(c.describe(source), ms, 'reading the source schema', () => void c.close().catch(() => {})),
    stream: (spec: ReadSpec, ctx: ConnectorContext): AsyncIterable<Row> => bounded((signal) => c.stream(spec, { ...ctx, signal }), ctx, ms),
    close: () => c.close(),
  };
  if (c.streamBatches) {
    const streamBatches = c.streamBatches.bind(c);
    wrapped.streamBatches = (spec, ctx, size) => bounded((signal) => streamBatches(spec, { ...ctx, signal }, size), ctx, ms);
  }
  if (c.count) {
    const count = c.count.bind(c);
    wrapped.count = (spec, ctx) => cancellable(ctx, ms, 'counting the source rows', (signal) => count(spec, { ...ctx, signal }));
  }
  if (c.splitPoints) {
    const splitPoints = c.splitPoints.bind(c);
    wrapped.splitPoints = (spec, column, every, ctx) =>
      cancellable(ctx, ms, 'planning the partitions', (signal) => splitPoints(spec, column, every, { ...ctx, signal }));
  }
  if (c.changePoint) {
    const changePoint = c.changePoint.bind(c);
    wrapped.changePoint = (ctx) => cancellable(ctx, ms, 'reading the source clock', (signal) => changePoint({ ...ctx, signal }));
  }
  if (c.streamChanges) {
    const streamChanges = c.streamChanges.bind(c);
    wrapped.streamChanges = (spec, since, key, ctx) => bounded((signal) => streamChanges(spec, since, key, { ...ctx, signal }), ctx, ms);
  }
  return wrapped;
}
