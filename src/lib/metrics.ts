import client from 'prom-client';

/** Declared once at module level so every part of the process shares one registry. */
export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

export const httpRequestDuration = new client.Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request latency by route and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const eventsIngested = new client.Counter({
  name: 'events_ingested_total',
  help: 'Events stored, by source (import, track, warehouse-import, migration, batch-import)',
  labelNames: ['source'] as const,
  registers: [registry],
});

export const jobsTotal = new client.Counter({
  name: 'jobs_total',
  help: 'Jobs finished, by queue and outcome',
  labelNames: ['queue', 'outcome'] as const,
  registers: [registry],
});

export const queueDepth = new client.Gauge({
  name: 'queue_depth',
  help: 'Jobs waiting or delayed per queue (sampled on scrape)',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
});

export const workerFetchRestarts = new client.Counter({
  name: 'worker_fetch_restarts_total',
  help: 'Queue workers replaced because they took no job while jobs waited (a fetch loop wedged after a Redis outage)',
  labelNames: ['queue'] as const,
  registers: [registry],
});
