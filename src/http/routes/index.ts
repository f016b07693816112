import type { Express } from 'express';
import type { AppDeps } from '../deps.js';
import { mountHealth } from './health.routes.js';

/** Every surface's router, in mount order. */
export const routers: ((app: Express, deps: AppDeps) => void)[] = [mountHealth];
