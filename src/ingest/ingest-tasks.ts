/**
 * The CPU work the ingest pool's threads take: an /import body, or a batch-import chunk of
 * events. Both end in rows for the event store; the same function runs inline when no worker is
 * up, so a task's result never depends on where it ran.
 */
import { prepareEventBatch, type PrepareInput, type PreparedBatch } from './events-prepare.js';
import { prepareEventChunk, type EventChunkInput, type PreparedEventChunk } from './batch-chunk.js';

export type TaskInput = { kind: 'import'; input: PrepareInput } | { kind: 'chunk'; input: EventChunkInput };

export interface TaskResult {
  import: PreparedBatch;
  chunk: PreparedEventChunk;
}

export function prepareTask(task: TaskInput): PreparedBatch | PreparedEventChunk {
  return task.kind === 'import' ? prepareEventBatch(task.input) : prepareEventChunk(task.input);
}
