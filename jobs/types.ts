/**
 * What a job handler gets: the one run context (src/runs/context.ts), never the BullMQ job.
 */
import type { JobName, JobPayload } from '../src/queue/catalog.js';
import type { RunContext } from '../src/runs/context.js';

export type JobContext = RunContext;

export type JobHandler<N extends JobName> = (payload: JobPayload<N>, ctx: JobContext) => Promise<unknown>;
