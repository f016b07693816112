/**
 * The answer of the legacy SDK forms (/track, /engage, /groups, and /import's GET or form): `1` or
 * `0`, or `{status, error, …}` with verbose=1 — delivered the way the request asks, as Mixpanel's
 * HTTP spec has it:
 * - `img=1`: a 1×1 transparent GIF (a tracking pixel in an e-mail; mixpanel-browser's `img`
 *   option), never cached;
 * - `callback=<function>`: JavaScript that calls it with the answer (mixpanel-browser's JSONP
 *   transport where it has no XMLHttpRequest, e.g. `mixpanel._jsc[12345678]`, or
 *   `(function(){})` when it wants no answer). Always 200, because a script that fails to load
 *   never runs its callback: the answer itself says 0 or 1.
 * A callback is echoed into JavaScript, so only a dotted name with numeric indexes (or that
 * no-op function) is accepted; anything else is a 400 before the body is read.
 */
import type { IncomingMessage } from 'node:http';
import type { Response } from 'express';
import { ValidationError } from '../lib/errors.js';
import { queryOf } from './query-of.js';

/** 43 bytes: GIF89a, 1×1, one transparent pixel. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const CALLBACK = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*|\[\d{1,16}\])*$/;
const NO_OP_CALLBACK = '(function(){})';
const MAX_CALLBACK = 200;

export type LegacyBody = { status: 0 | 1; error: string | null } & Record<string, unknown>;

function queryValue(req: IncomingMessage | undefined, name: string): string | undefined {
  return req ? (queryOf(req).get(name) ?? undefined) : undefined;
}

function isCallback(value: string): boolean {
  return value === NO_OP_CALLBACK || (value.length <= MAX_CALLBACK && CALLBACK.test(value));
}

/** Refuses a `callback` that is not a function name, before any work is done (400). */
export function checkLegacyDelivery(req: IncomingMessage): void {
  const callback = queryValue(req, 'callback');
  if (callback !== undefined && callback !== '' && !isCallback(callback)) {
    throw new ValidationError(400, "'callback' must be a JavaScript function name such as mixpanel._jsc[123] (letters, digits, _ and $, dots and [number])");
  }
}

/** Sends a legacy answer: `status` is the HTTP status it would have as plain text or JSON. */
export function sendLegacyAnswer(res: Response, status: number, body: LegacyBody, verbose: boolean): void {
  const req = res.req as IncomingMessage | undefined;
  const value: unknown = verbose ? body : body.status;
  if (queryValue(req, 'img') === '1') {
    res.status(status).set('Cache-Control', 'no-cache, no-store, must-revalidate').type('image/gif').send(PIXEL);
    return;
  }
  const callback = queryValue(req, 'callback');
  if (callback && isCallback(callback)) {
    res.status(200).type('application/javascript').send(`${callback}(${JSON.stringify(value)});`);
    return;
  }
  if (verbose) res.status(status).json(body);
  else res.status(status).type('text/plain').send(String(body.status));
}
