import type { Express } from 'express';
import type { AppDeps } from '../deps.js';
import { mountBatchImports } from './batch-imports.routes.js';
import { mountClientSdk } from './client-sdk.routes.js';
import { mountOperator } from './operator.routes.js';
import { mountEventNames } from './event-names.routes.js';
import { mountExport } from './export.routes.js';
import { mountHealth } from './health.routes.js';
import { mountIdentities } from './identities.routes.js';
import { mountImport } from './import.routes.js';
import { mountInsights } from './insights.routes.js';
import { mountLookupTables } from './lookup-tables.routes.js';
import { mountLookupTablesApp } from './lookup-tables-app.routes.js';
import { mountMigrate } from './migrate.routes.js';
import { mountMigrationsApp } from './migrations-app.routes.js';
import { mountProfiles } from './profiles.routes.js';
import { mountProfilesQuery } from './profiles-query.routes.js';
import { mountTrack } from './track.routes.js';
import { mountExperiments } from './experiments.routes.js';
import { mountWarehouse } from './warehouse.routes.js';

/** Every surface's router, in mount order. */
export const routers: ((app: Express, deps: AppDeps) => void)[] = [mountHealth];
// CORS for client SDKs first, so that the ingestion routers' answers carry it (docs/identity.md).
routers.push(mountClientSdk, mountImport, mountTrack, mountProfiles);
// Read-back (docs/read-back.md).
routers.push(mountExport, mountProfilesQuery, mountEventNames, mountInsights);
// Identity clusters of the simplified ID merge (docs/identity.md).
routers.push(mountIdentities);
// Experiments API and its OpenAPI document (docs/experiments.md).
routers.push(mountExperiments);
// Lookup tables: ingestion API and app API (docs/profiles-and-lookup-tables.md).
routers.push(mountLookupTables, mountLookupTablesApp);
// Migration service and its app API, usage (docs/migration.md).
routers.push(mountMigrate, mountMigrationsApp);
// Warehouse connector: sources, imports, manual sync, history (docs/warehouse.md).
routers.push(mountWarehouse);
// Job platform: batch imports, Bull Board and /metrics (docs/job-platform.md).
routers.push(mountBatchImports, mountOperator);
