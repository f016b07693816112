/** Synthetic experiments for scale tests and benches, written through the repository in bulk. */
import crypto from 'node:crypto';
import type { ExperimentActor, ExperimentRecord } from '../../src/domain/experiment.js';
import { EXPERIMENT_STATUSES } from '../../src/domain/experiment-state.js';

export function syntheticExperiments(workspaceId: number, actor: ExperimentActor, count: number, now = Date.now()): ExperimentRecord[] {
  return Array.from({ length: count }, (_, i) => {
    const status = EXPERIMENT_STATUSES[i % EXPERIMENT_STATUSES.length]!;
    const started = status === 'draft' ? null : now - 86_400_000;
    return {
      id: crypto.randomUUID(),
      workspaceId,
      name: `experiment ${i}`,
      contentType: 'experiment',
      description: i % 2 ? `description of experiment ${i}` : null,
      hypothesis: i % 3 ? 'variant b converts better' : null,
      status,
      tags: ['synthetic', `batch-${i % 10}`],
      variants: [
        { key: 'control', split: 0.5 },
        { key: 'treatment', split: 0.5 },
      ],
      metrics: [{ event: 'purchase', type: 'conversion' }],
      settings: { traffic: 1 },
      exposuresCache: { control: i, treatment: i + 1 },
      resultsCache: {},
      featureFlag: i % 4 ? null : { key: `flag-${i}` },
      decision: null,
      creator: actor,
      lastModifiedBy: actor,
      isFavorited: i % 7 === 0,
      isSharedWithProject: true,
      pinnedDate: i % 5 ? null : '2024-06-01',
      // Distinct creation times, so the newest-first order is fully determined.
      created: now - i * 1000,
      modified: now - i * 1000,
      deleted: null,
      startDate: started,
      endDate: status === 'draft' || status === 'active' ? null : now,
      archivedAt: null,
    };
  });
}
