/**
 * The client-SDK surface beyond the ingestion endpoints (docs/identity.md, "Browsers"):
 * CORS with credentials on every path a client SDK calls (client-cors.ts), and answers for the
 * calls mixpanel-browser makes besides /track, /engage and /groups:
 * - `GET /flags` (feature flags, when the SDK's `flags` option is on) → `{"flags":{}}`: this
 *   service defines no feature flags, so every flag takes the SDK's fallback;
 * - `GET /settings` (remote settings) → `{"sdk_config":{"config":{}}}`: nothing overrides the
 *   page's own configuration;
 * - `GET|POST /decide` (older SDK versions) → no notifications, no flags, default config;
 * - `POST /record` (session replay) → 501: replays are not stored here, and saying so beats
 *   answering 200 and dropping them.
 * Each needs a valid project token (`token` query parameter or Basic username, as the SDK
 * sends it): 401 otherwise, in the ingestion error shape.
 */
import type { Express, Request, Response } from 'express';
import { parseBasicAuth } from '../../accounts/authenticator.js';
import { findProjectByToken, type Project } from '../../db/accounts.repo.js';
import { ValidationError } from '../../lib/errors.js';
import { CLIENT_SDK_PATHS, clientSdkCors } from '../client-cors.js';
import type { AppDeps } from '../deps.js';
import { assertResidency } from '../ingest-auth.js';
import { surface } from '../surface.js';
import { methodNotAllowed } from '../method-not-allowed.js';

async function tokenProject(deps: AppDeps, req: Request): Promise<Project> {
  const q = req.query.token;
  const token = typeof q === 'string' && q !== '' ? q : parseBasicAuth(req.headers.authorization)?.username;
  if (!token) throw new ValidationError(401, "missing project token: send it as the 'token' query parameter or the Basic username");
  const project = await findProjectByToken(deps.db, token);
  if (!project) throw new ValidationError(401, 'Invalid token');
  assertResidency(project, deps.config.REGION);
  return project;
}

export function mountClientSdk(app: Express, deps: AppDeps): void {
  // Before every ingestion router, so that their answers (and errors) carry the headers too.
  app.use([...CLIENT_SDK_PATHS], clientSdkCors);

  const answer = (body: unknown) => async (req: Request, res: Response) => {
    await tokenProject(deps, req);
    res.json(body);
  };
  app.get('/flags', surface('ingest'), answer({ flags: {} }));
  app.get('/settings', surface('ingest'), answer({ sdk_config: { config: {} } }));
  const decide = answer({ notifications: [], feature_flags: [], config: { enable_collect_everything: false } });
  app.get('/decide', surface('ingest'), decide);
  app.post('/decide', surface('ingest'), decide);
  app.post('/record', surface('ingest'), async (req: Request) => {
    req.resume();
    await tokenProject(deps, req);
    throw new ValidationError(501, 'session replay is not supported by this service: set record_sessions_percent to 0');
  });
  app.all(['/flags', '/settings'], surface('ingest'), methodNotAllowed(['GET']));
  app.all('/decide', surface('ingest'), methodNotAllowed(['GET', 'POST']));
  app.all('/record', surface('ingest'), methodNotAllowed(['POST']));
}
