/** Messages between sqlite.connector.ts (parent) and sqlite.child.ts (the child process that reads). */
import type { SqlitePathSettings } from './sqlite-path.js';
import type { ColumnInfo, ReadSpec, Row, TableRef } from './warehouse.js';

export type SqliteOp =
  | { op: 'test' }
  | { op: 'describe'; source: TableRef }
  | { op: 'count'; spec: ReadSpec }
  | { op: 'splitPoints'; spec: ReadSpec; column: string; every: number }
  | { op: 'stream'; spec: ReadSpec; size: number };

export type ToChild =
  | { kind: 'start'; path: string; pathSettings: SqlitePathSettings; request: SqliteOp }
  /** Stream: the parent may take `n` more batches. */
  | { kind: 'credit'; n: number };

export type FromChild =
  | { kind: 'result'; value: void | number | ColumnInfo[] | (string | number)[] }
  | { kind: 'batch'; rows: Row[] }
  | { kind: 'done' }
  | { kind: 'error'; name: string; message: string; retryable?: boolean };
