/**
 * Operator credentials (ADMIN_USERNAME / ADMIN_PASSWORD) guard /admin/queues and /metrics.
 * Without them the operator surface is open only in NODE_ENV=development; anywhere else it
 * answers 503 "not configured" instead of mounting unguarded (the rest of the service keeps
 * serving: a missing operator setting should not take ingestion down).
 */
import type { NextFunction, Request, Response } from 'express';
import type { Config } from '../../config/index.js';
import { parseBasicAuth } from '../accounts/authenticator.js';
import { ValidationError } from '../lib/errors.js';
import { safeEqual } from '../lib/secrets.js';

export type OperatorCheck = 'ok' | 'open' | 'unauthorized' | 'unconfigured';

type OperatorConfig = Pick<Config, 'ADMIN_USERNAME' | 'ADMIN_PASSWORD' | 'NODE_ENV'>;

export function operatorAuthConfigured(config: OperatorConfig): boolean {
  return Boolean(config.ADMIN_USERNAME && config.ADMIN_PASSWORD);
}

export function checkOperator(config: OperatorConfig, authorization: string | undefined): OperatorCheck {
  if (!operatorAuthConfigured(config)) return config.NODE_ENV === 'development' ? 'open' : 'unconfigured';
  const creds = parseBasicAuth(authorization);
  // Both compared, always, in constant time: no early exit that tells which one was wrong.
  const userOk = safeEqual(creds?.username ?? '', config.ADMIN_USERNAME!);
  const passOk = safeEqual(creds?.password ?? '', config.ADMIN_PASSWORD!);
  return creds && userOk && passOk ? 'ok' : 'unauthorized';
}

export const OPERATOR_REALM = 'Basic realm="operators", charset="UTF-8"';

export function requireOperator(config: OperatorConfig) {
  return (req: Request, _res: Response, next: NextFunction) => {
    const check = checkOperator(config, req.headers.authorization);
    if (check === 'ok' || check === 'open') return next();
    if (check === 'unconfigured') {
      return next(new ValidationError(503, 'operator surface disabled: set ADMIN_USERNAME and ADMIN_PASSWORD (open only with NODE_ENV=development)'));
    }
    next(new ValidationError(401, 'operator credentials required', { headers: { 'WWW-Authenticate': OPERATOR_REALM } }));
  };
}
