/**
 * The run source of every kind, for the reconciler (src/runs/reconciler.ts). Each area adds one
 * entry here. The kinds' sources import their types from src/runs/run-source.ts, never this file
 * (eslint.config.js and test/unit/architecture.test.ts keep it that way).
 */
import type { RunSource } from '../src/runs/run-source.js';
import { batchImportsReconcileSource } from './batch-import.reconcile.js';
import { migrationsReconcileSource } from './migration.reconcile.js';
import { warehouseSyncReconcileSource } from './warehouse-sync.reconcile.js';

export const reconcileSources: RunSource[] = [batchImportsReconcileSource, migrationsReconcileSource, warehouseSyncReconcileSource];
