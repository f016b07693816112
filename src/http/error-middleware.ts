import http from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../lib/logger.js';
import { errorMessage, StoreUnavailableError, ValidationError } from '../lib/errors.js';
import type { StoreOutageCheck } from '../store/store-outage.js';
import { errorCode, looksLikeStoreOutage } from '../lib/error-codes.js';
import { surfaceOf } from './surface.js';
import { allowedMethods } from './allowed-methods.js';
import { methodNotAllowed } from './method-not-allowed.js';
import { sendLegacyAnswer } from './legacy-answer.js';

const TYPES: Record<number, string> = {
  400: 'validation_error',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  500: 'internal_error',
  503: 'unavailable',
};

/** Errors from express's own body parsers carry a status and a type. */
function fromBodyParser(err: unknown): ValidationError | undefined {
  const e = err as { status?: number; type?: string; message?: string };
  if (typeof e?.status !== 'number' || typeof e.type !== 'string') return undefined;
  if (e.type === 'entity.parse.failed') return new ValidationError(400, 'request body is not valid JSON');
  if (e.type === 'entity.too.large') return new ValidationError(413, 'Request Entity Too Large');
  if (e.type === 'encoding.unsupported') return new ValidationError(415, 'unsupported content encoding');
  if (e.status >= 400 && e.status < 500) return new ValidationError(e.status, e.message ?? 'bad request');
  return undefined;
}

/** A URL whose percent-encoding is not UTF-8 (a lone surrogate, say) cannot name anything. */
function fromUrl(err: unknown): ValidationError | undefined {
  return err instanceof URIError ? new ValidationError(400, 'the URL is not valid percent-encoded UTF-8') : undefined;
}

/**
 * The event store or the database is down or overloaded: the client should retry (dedupe makes
 * that safe). A connection-level failure reaching this far is our own store's: connectors turn
 * their sources' failures into errors of their own.
 */
export function fromStore(err: unknown): ValidationError | undefined {
  if (isSqliteBusy(err)) {
    return new ValidationError(503, 'database busy (another process holds its write lock): retry later', { headers: { 'Retry-After': '5' } });
  }
  if (!looksLikeStoreOutage(err)) return undefined;
  return unavailable(err instanceof StoreUnavailableError ? 'event store' : 'database');
}

/**
 * SQLite's write lock stayed taken past busy_timeout: a web and a worker process share one file,
 * and a long job transaction (a slow event-store write inside it) holds the lock. Nothing is
 * broken and nothing was written, so the client retries, as after an outage.
 */
function isSqliteBusy(err: unknown): boolean {
  const code = errorCode(err);
  return code === 'SQLITE_BUSY' || code?.startsWith('SQLITE_BUSY_') === true;
}

function unavailable(what: 'event store' | 'database'): ValidationError {
  return new ValidationError(503, `${what} unavailable: retry later (a retry never stores an event twice)`, { headers: { 'Retry-After': '5' } });
}

export function sendError(res: Response, err: ValidationError): void {
  const status = err.status;
  const headers = err.details?.headers as Record<string, string> | undefined;
  if (headers) res.set(headers);
  const details = { ...err.details };
  delete details.headers;
  // A streaming answer may have typed its body before failing (export's text/plain): the
  // error body is typed by its own shape below.
  res.removeHeader('content-type');
  switch (surfaceOf(res)) {
    case 'ingest':
      res.status(status).json({ code: status, error: err.message, status: http.STATUS_CODES[status] ?? 'Error', ...details });
      return;
    case 'legacy':
      // The SDK forms answer 0, or {status:0,error} with verbose=1 (as a pixel or JSONP when asked).
      sendLegacyAnswer(res, status, { status: 0, error: err.message }, Boolean(res.locals.verbose));
      return;
    case 'operator':
      res.status(status).type('text/plain').send(err.message);
      return;
    case 'app':
    default:
      if (status === 401 || status === 403) res.status(status).json({ status: 'error', error: err.message });
      else res.status(status).json({ status: 'error', type: TYPES[status] ?? 'error', error: err.message, ...details });
  }
}

/**
 * `storeOutage` (src/store/store-outage.ts) is asked about an error nothing above recognised: a
 * server gone mid-query leaves the driver's error without a code, and the probe tells an outage
 * (503) from a bug (500).
 */
export function errorMiddleware(log: Logger, storeOutage?: StoreOutageCheck) {
  return async (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const known = err instanceof ValidationError ? err : fromStore(err) ?? fromUrl(err) ?? fromBodyParser(err);
    if (res.headersSent) {
      log.error({ err, reqId: res.locals.reqId }, 'error after response started');
      res.destroy();
      return;
    }
    if (known) {
      sendError(res, known);
      return;
    }
    if (storeOutage && (await storeOutage(err))) {
      log.warn({ err: errorMessage(err), reqId: res.locals.reqId, method: req.method, path: req.path }, 'store unavailable');
      sendError(res, unavailable('database'));
      return;
    }
    log.error({ err, reqId: res.locals.reqId, method: req.method, path: req.path }, 'unhandled error');
    sendError(res, new ValidationError(500, 'internal error'));
  };
}

/** No route took the request: 405 when the path exists under other methods, else 404. */
export function notFoundHandler(req: Request, res: Response, next: NextFunction): void {
  const allowed = allowedMethods(req.app, req.path);
  if (allowed.length === 0) {
    next(new ValidationError(404, 'not found'));
    return;
  }
  try {
    methodNotAllowed(allowed)(req, res);
  } catch (err) {
    next(err);
  }
}
