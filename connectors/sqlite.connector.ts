/**
 * A SQLite file as a warehouse source. Every request (test, describe, count, stream) runs in a
 * child process (sqlite.child.ts over SqliteReader): better-sqlite3 runs a statement to its end
 * in native code, and a user's query can make that for ever (a recursive CTE) — in-process it
 * would freeze the service, and neither a worker thread nor V8 can interrupt native code. A
 * child is SIGKILLed on abort (the read deadline, shutdown) or close(), whatever it is doing.
 * Streams flow with back-pressure: the child is at most `PREFETCH` batches ahead of the consumer.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { FromChild, SqliteOp, ToChild } from './sqlite-child-protocol.js';
import type { SqlitePathSettings } from './sqlite-path.js';
import {
  WarehouseError,
  WarehouseReadAborted,
  type ColumnInfo,
  type ConnectorContext,
  type ReadSpec,
  type Row,
  type TableRef,
  type WarehouseConnector,
} from './warehouse.js';

export const sqliteConfigSchema = z
  .object({
    path: z
      .string({ error: 'config.path is required: the absolute path of the SQLite file' })
      .min(1, 'config.path must not be empty')
      .refine((p) => path.isAbsolute(p), 'config.path must be an absolute path'),
  })
  .strict();

export type SqliteSourceConfig = z.infer<typeof sqliteConfigSchema>;

/** Rows per batch of `stream()`. */
const STREAM_BATCH = 1000;
/** Batches the child may read ahead of the consumer. */
const PREFETCH = 2;

/** Forks the child entry beside this module: compiled JS as is, TypeScript sources through tsx. */
function forkChild(): ChildProcess {
  const ts = import.meta.url.endsWith('.ts');
  const entry = fileURLToPath(new URL(`./sqlite.child.${ts ? 'ts' : 'js'}`, import.meta.url));
  return fork(entry, [], {
    execArgv: ts ? ['--import', import.meta.resolve('tsx')] : [],
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
}

type Incoming = FromChild | { kind: 'exit'; detail: string };

/** One child process: requests one at a time, messages in order, a kill that always works. */
class SqliteChild {
  private readonly child = forkChild();
  private readonly inbox: Incoming[] = [];
  private notify?: () => void;
  private stderr = '';
  exited = false;

  constructor() {
    const push = (m: Incoming) => {
      this.inbox.push(m);
      this.notify?.();
    };
    this.child.on('message', (m: FromChild) => push(m));
    this.child.stderr?.on('data', (d: Buffer) => {
      if (this.stderr.length < 4000) this.stderr += d.toString();
    });
    this.child.on('exit', (code, signal) => {
      this.exited = true;
      push({ kind: 'exit', detail: signal ?? `code ${code}` });
    });
    this.child.on('error', (err) => push({ kind: 'exit', detail: err.message }));
    // An idle child must not keep the service's process alive.
    this.child.unref();
    (this.child.channel as { unref?: () => void } | undefined)?.unref?.();
    (this.child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
  }

  start(config: SqliteSourceConfig, pathSettings: SqlitePathSettings, request: SqliteOp): void {
    this.inbox.length = 0;
    this.post({ kind: 'start', path: config.path, pathSettings, request });
  }

  post(m: ToChild): void {
    if (this.child.connected) this.child.send(m);
  }

  async next(): Promise<Incoming> {
    (this.child.channel as { ref?: () => void } | undefined)?.ref?.();
    try {
      while (this.inbox.length === 0) await new Promise<void>((resolve) => (this.notify = resolve));
      return this.inbox.shift()!;
    } finally {
      (this.child.channel as { unref?: () => void } | undefined)?.unref?.();
    }
  }

  /** The answer to a one-shot request, or the child's error. */
  async result(): Promise<unknown> {
    const m = await this.next();
    if (m.kind === 'result') return m.value;
    throw this.failure(m);
  }

  failure(m: Incoming): Error {
    if (m.kind === 'error') return m.name === 'WarehouseError' ? new WarehouseError(m.message, m.retryable ?? false) : new Error(m.message);
    if (m.kind === 'exit') return new Error(`SQLite reader process ended (${m.detail}) before answering${this.stderr ? `: ${this.stderr.trim().split('\n').pop()}` : ''}`);
    return new Error(`unexpected message from the SQLite reader: ${m.kind}`);
  }

  kill(): void {
    if (!this.exited) this.child.kill('SIGKILL');
  }
}

/**
 * Idle children, shared by every SQLite connector of this process (a fork costs tens of
 * milliseconds, hundreds under load): a request carries its own path and settings, and a child
 * keeps nothing between requests. A child exits by itself after a minute without work.
 */
const idlePool: SqliteChild[] = [];
// A reader process is ~40 MB compiled (~100 MB under tsx): keep few.
const MAX_IDLE = 2;

export class SqliteConnector implements WarehouseConnector {
  readonly type = 'sqlite' as const;
  private readonly busy = new Set<SqliteChild>();

  constructor(
    private readonly config: SqliteSourceConfig,
    /** The allowed-directories rule, checked again by the child at every open. */
    private readonly pathSettings: SqlitePathSettings,
  ) {}

  private acquire(request: SqliteOp): SqliteChild {
    let child = idlePool.pop();
    while (child?.exited) child = idlePool.pop();
    child ??= new SqliteChild();
    this.busy.add(child);
    child.start(this.config, this.pathSettings, request);
    return child;
  }

  /** A child whose request completed goes back to the pool; one interrupted mid-request is killed. */
  private release(child: SqliteChild, completed: boolean): void {
    if (!this.busy.delete(child)) return;
    if (completed && !child.exited && idlePool.length < MAX_IDLE) idlePool.push(child);
    else child.kill();
  }

  /** A one-shot request; an abort of `signal` kills its child. */
  private async call<T>(request: SqliteOp, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw new WarehouseReadAborted();
    const child = this.acquire(request);
    const onAbort = () => child.kill();
    signal?.addEventListener('abort', onAbort, { once: true });
    let completed = false;
    try {
      const value = (await child.result()) as T;
      completed = true;
      return value;
    } catch (err) {
      if (signal?.aborted) throw new WarehouseReadAborted();
      completed = err instanceof WarehouseError && !child.exited;
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.release(child, completed);
    }
  }

  async test(): Promise<void> {
    await this.call<void>({ op: 'test' });
  }

  describe(source: TableRef): Promise<ColumnInfo[]> {
    return this.call<ColumnInfo[]>({ op: 'describe', source });
  }

  count(spec: ReadSpec, ctx?: ConnectorContext): Promise<number> {
    return this.call<number>({ op: 'count', spec }, ctx?.signal);
  }

  splitPoints(spec: ReadSpec, column: string, every: number, ctx?: ConnectorContext): Promise<(string | number)[]> {
    return this.call<(string | number)[]>({ op: 'splitPoints', spec, column, every }, ctx?.signal);
  }

  async *stream(spec: ReadSpec, ctx: ConnectorContext): AsyncIterable<Row> {
    for await (const batch of this.streamBatches(spec, ctx, STREAM_BATCH)) yield* batch;
  }

  async *streamBatches(spec: ReadSpec, ctx: ConnectorContext, size: number): AsyncIterable<Row[]> {
    if (ctx.signal.aborted) throw new WarehouseReadAborted();
    const child = this.acquire({ op: 'stream', spec, size });
    const onAbort = () => child.kill();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    let completed = false;
    try {
      child.post({ kind: 'credit', n: PREFETCH });
      for (;;) {
        const m = await child.next();
        if (ctx.signal.aborted) throw new WarehouseReadAborted();
        if (m.kind === 'batch') {
          yield m.rows;
          child.post({ kind: 'credit', n: 1 });
        } else if (m.kind === 'done') {
          completed = true;
          return;
        } else {
          completed = m.kind === 'error';
          throw child.failure(m);
        }
      }
    } finally {
      ctx.signal.removeEventListener('abort', onAbort);
      this.release(child, completed);
    }
  }

  /** Kills the children still running a request of this connector (a deadline passed, or the caller gave up). */
  async close(): Promise<void> {
    for (const child of this.busy) child.kill();
    this.busy.clear();
  }
}
