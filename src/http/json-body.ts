/**
 * A JSON request body for the app API: read with the streaming size limit of body.ts (gzip
 * allowed), refused with 415 when it declares another media type, 400 when it does not parse.
 * An empty body is `undefined`, so a route can decide whether it needs one.
 */
import type { Request } from 'express';
import { ValidationError } from '../lib/errors.js';
import { readBody } from './body.js';

export async function readJsonBody(req: Request, maxBytes: number): Promise<unknown> {
  const type = req.headers['content-type'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  // No Content-Type is tolerated (curl -d without -H); a different one is a client mistake,
  // refused before the body is read.
  if (hasBody && type !== undefined && !/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
    req.resume();
    throw new ValidationError(415, `unsupported Content-Type '${type.split(';')[0]}' (send application/json)`);
  }
  const buf = await readBody(req, { maxBytes });
  if (buf.toString('utf8').trim() === '') return undefined;
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch {
    throw new ValidationError(400, 'request body is not valid JSON');
  }
}
