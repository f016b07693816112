import type { Express } from 'express';
import type { AppDeps } from '../deps.js';
import { mountHealth } from './health.routes.js';
import { mountImport } from './import.routes.js';
import { mountTrack } from './track.routes.js';

/** Every surface's router, in mount order. */
export const routers: ((app: Express, deps: AppDeps) => void)[] = [mountHealth, mountImport, mountTrack];
