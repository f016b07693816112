/** Messages between the events sync writer and its reader thread. */
import type { Config } from '../../config/index.js';
import type { Row } from '../../connectors/warehouse.js';
import type { EventReadPlan, PreparedEventBatch } from './event-reader.js';

export interface ReaderInit {
  type: string;
  /** The opened source config: passed in memory to the thread, never logged or queued. */
  config: unknown;
  settings: Config;
  plan: EventReadPlan;
}

export type ReaderRequest = { kind: 'init'; init: ReaderInit } | { kind: 'credit'; n: number } | { kind: 'stop' };

export type ReaderReply =
  | { kind: 'ready' }
  | { kind: 'batch'; batch: PreparedEventBatch }
  /** Source rows for the writer's side to prepare (a connector with a costly client); `first` = run row number of rows[0]. */
  | { kind: 'rows'; first: number; rows: Row[] }
  | { kind: 'done' }
  | { kind: 'aborted' }
  | { kind: 'error'; name: string; message: string; retryable?: boolean };
