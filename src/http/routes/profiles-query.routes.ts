/**
 * `GET|POST /api/2.0/engage` (also `/api/query/engage`, Mixpanel's current path): query user
 * profiles — or group profiles with `data_group_id=<group key>` — in Mixpanel's engage response
 * shape `{page, page_size, session_id, status:"ok", total, results:[{$distinct_id,$properties}]}`.
 * Parameters come from the query string or a form-encoded body (Mixpanel clients POST a form).
 */
import crypto from 'node:crypto';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { setOwn } from '../../domain/export-record.js';
import { deviceOfDistinctId } from '../../domain/identity.js';
import type { EventStore } from '../../store/event-store.js';
import { ValidationError } from '../../lib/errors.js';
import { queryProfiles } from '../../readback/profile-query.js';
import { accessOf } from '../auth-middleware.js';
import type { AppDeps } from '../deps.js';
import { requireReadAccess, withRequestInErrors } from '../read-back-access.js';
import { integer, single, stringArray, whereParam, type Params } from '../read-back-params.js';
import { readBody } from '../request-body.js';
import { surface } from '../surface.js';

export const ENGAGE_MAX_PAGE_SIZE = 1000;

/** Mixpanel parameters we cannot honour: refused rather than silently ignored. */
const UNSUPPORTED = ['behaviors', 'filter_by_cohort', 'as_of_timestamp'];

const FORM_MAX_BYTES = 1024 * 1024;

/** A form-encoded POST's fields as `req.body` (read by the one body reader); any other POST body is a 415. */
async function formFields(req: Request, _res: Response, next: NextFunction): Promise<void> {
  if (req.method === 'POST' && /^application\/x-www-form-urlencoded\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
    const fields = Object.create(null) as Record<string, string | string[]>;
    for (const [k, v] of new URLSearchParams((await readBody(req, { maxBytes: FORM_MAX_BYTES })).toString('utf8'))) {
      const prev = fields[k];
      fields[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    req.body = fields;
  } else if (req.method === 'POST' && (await readBody(req, { maxBytes: FORM_MAX_BYTES })).length > 0) {
    // Any other body (JSON, say) would go unread and its filter ignored: every profile answered.
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim() || 'none';
    throw new ValidationError(415, `unsupported Content-Type '${type}': send the parameters form-encoded (application/x-www-form-urlencoded) or in the query string`);
  }
  next();
}

function paramsOf(req: Request): Params {
  const body = typeof req.body === 'object' && req.body !== null && !Array.isArray(req.body) ? (req.body as Params) : {};
  return { ...(req.query as Params), ...body };
}

/** The user each `$device:<d>` id among `ids` resolves to, for devices linked to one (CONTRACT §2.6). */
async function linkedUsersOf(events: EventStore, projectId: number, ids: readonly string[]): Promise<Map<string, string>> {
  const deviceOf = new Map<string, string>();
  for (const id of ids) {
    const device = deviceOfDistinctId(id);
    if (device !== undefined) deviceOf.set(id, device);
  }
  if (deviceOf.size === 0) return new Map();
  const users = await events.usersOfDevices(projectId, [...deviceOf.values()]);
  const out = new Map<string, string>();
  for (const [id, device] of deviceOf) {
    const user = users.get(device);
    if (user !== undefined) out.set(id, user);
  }
  return out;
}

export function mountProfilesQuery(app: Express, deps: AppDeps): void {
  const router = express.Router();
  router.use(surface('ingest'));
  router.use(formFields);

  const handle = async (req: Request, res: Response) => {
    const { project } = accessOf(res);
    const params = paramsOf(req);
    for (const name of UNSUPPORTED) {
      if (params[name] !== undefined && params[name] !== '') throw new ValidationError(400, `'${name}' is not supported by this service`);
    }
    const distinctId = single(params, 'distinct_id');
    const distinctIds = stringArray(params, 'distinct_ids');
    if (distinctId !== undefined && distinctIds !== undefined) throw new ValidationError(400, "give 'distinct_id' or 'distinct_ids', not both");
    const outputProperties = stringArray(params, 'output_properties');
    const pageSize = integer(params, 'page_size', { min: 1, max: ENGAGE_MAX_PAGE_SIZE, default: ENGAGE_MAX_PAGE_SIZE })!;
    const page = integer(params, 'page', { min: 0, max: 1_000_000, default: 0 })!;
    const groupKey = single(params, 'data_group_id');
    const where = whereParam(params);
    const sessionId = single(params, 'session_id') ?? `${Date.now()}-${crypto.randomBytes(6).toString('hex')}`;

    const ids = distinctId !== undefined ? [distinctId] : distinctIds;
    const { rows, total } = await queryProfiles(deps.db, {
      projectId: project.id,
      groupKey,
      ids,
      resolved: ids && groupKey === undefined && project.idMerge === 'simplified' ? await linkedUsersOf(deps.events, project.id, ids) : undefined,
      where,
      page,
      pageSize,
    });
    const results = rows.map((p) => {
      let props = p.properties;
      if (outputProperties) {
        props = {};
        for (const k of outputProperties) if (Object.prototype.hasOwnProperty.call(p.properties, k)) setOwn(props, k, p.properties[k]);
      }
      return { $distinct_id: p.id, $properties: props };
    });
    res.json({ page, page_size: pageSize, session_id: sessionId, status: 'ok', total, results });
  };

  const access = requireReadAccess(deps, (req) => paramsOf(req).project_id);
  router.get('/', access, handle);
  router.post('/', access, handle);
  router.use(withRequestInErrors);
  app.use('/api/2.0/engage', router);
  app.use('/api/query/engage', router);
}
