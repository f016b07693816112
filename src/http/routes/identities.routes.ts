/**
 * `GET /api/app/projects/{pid}/identities?distinct_id=` (docs/identity.md): the
 * identity cluster a distinct id belongs to under the simplified ID merge —
 * `{"status":"ok","results":{"user_id","device_ids":[…]}}`. `$device:<d>` names a device (its
 * user, or `user_id: null` and just that device while no user is linked); any other id is a
 * user. Any role on the project may read it.
 */
import type { Express, Request, Response } from 'express';
import { accessOf } from '../auth-middleware.js';
import type { AppDeps } from '../deps.js';
import { requireReadAccess } from '../read-back-access.js';
import { required, type Params } from '../read-back-params.js';
import { ValidationError } from '../../lib/errors.js';
import { surface } from '../surface.js';

/** Longest distinct id looked up: a 255-byte device id plus the `$device:` prefix. */
const MAX_DISTINCT_ID_BYTES = 263;

export function mountIdentities(app: Express, deps: AppDeps): void {
  app.get(
    '/api/app/projects/:pid/identities',
    surface('app'),
    requireReadAccess(deps, (req) => req.params.pid),
    async (req: Request, res: Response) => {
      const distinctId = required(req.query as Params, 'distinct_id');
      if (Buffer.byteLength(distinctId, 'utf8') > MAX_DISTINCT_ID_BYTES) {
        throw new ValidationError(400, `'distinct_id' must be at most ${MAX_DISTINCT_ID_BYTES} bytes`);
      }
      const identity = await deps.events.identityOf(accessOf(res).project.id, distinctId);
      res.json({ status: 'ok', results: { user_id: identity.userId, device_ids: identity.deviceIds } });
    },
  );
}
