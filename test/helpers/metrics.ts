/** This process's Prometheus samples of one metric (src/lib/metrics.ts's registry), for assertions and diagnostics. */
import type { MetricValue } from 'prom-client';
import { registry } from '../../src/lib/metrics.js';

export async function metricValues(name: string): Promise<MetricValue<string>[]> {
  return (await registry.getSingleMetric(name)!.get()).values;
}
