/**
 * CORS for the surfaces client SDKs call from a customer's own site.
 * `mixpanel-browser` sends with `XMLHttpRequest.withCredentials = true`, and browsers refuse a
 * credentialed response unless it names the page's origin exactly (`*` is refused) and says
 * `Access-Control-Allow-Credentials: true`. The token inside the payload is the authentication,
 * as with Mixpanel, so every origin is echoed. Only the paths in CLIENT_SDK_PATHS get these
 * headers: the app, operator and migration surfaces stay same-origin.
 */
import type { NextFunction, Request, Response } from 'express';

/** Every path a client SDK calls (mixpanel-browser's api_routes plus the legacy /decide). */
export const CLIENT_SDK_PATHS = ['/track', '/engage', '/groups', '/flags', '/settings', '/record', '/decide'] as const;

const ALLOWED_METHODS = 'GET, POST, OPTIONS';
/** Requested headers are echoed only when they are a plain list of header names. */
const HEADER_LIST = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/;
const DEFAULT_HEADERS = 'Content-Type, Content-Encoding, Authorization';
/** Headers the SDK may read from a cross-origin answer (it reads Retry-After on 429). */
const EXPOSED_HEADERS = 'Retry-After, X-Records-Rejected, X-Request-Id';

function appendVary(res: Response, field: string): void {
  const current = res.getHeader('Vary');
  const list = String(current ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!list.some((v) => v.toLowerCase() === field.toLowerCase() || v === '*')) list.push(field);
  res.setHeader('Vary', list.join(', '));
}

/** The Origin header when it is one plain value (a comma or newline would smuggle a second). */
function originOf(req: Request): string | undefined {
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || origin === '' || /[\s,]/.test(origin)) return undefined;
  return origin;
}

/**
 * Middleware for CLIENT_SDK_PATHS: echoes the Origin with credentials on every answer (errors
 * included, so the SDK can read a 400 or 429 instead of seeing a network failure) and answers
 * the preflight itself with 204.
 */
export function clientSdkCors(req: Request, res: Response, next: NextFunction): void {
  // The answer depends on Origin even when none was sent: a shared cache must not reuse it.
  appendVary(res, 'Origin');
  const origin = originOf(req);
  if (origin) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
  }
  if (req.method !== 'OPTIONS') {
    next();
    return;
  }
  const requested = req.headers['access-control-request-headers'];
  const headers = typeof requested === 'string' && HEADER_LIST.test(requested.trim()) ? requested.trim() : DEFAULT_HEADERS;
  appendVary(res, 'Access-Control-Request-Headers');
  res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS);
  res.setHeader('Access-Control-Allow-Headers', headers);
  res.setHeader('Access-Control-Max-Age', '86400');
  res.status(204).end();
}
