import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * The one root logger. Redaction is a second line of defence: secrets should never reach a log
 * call in the first place, but an accidental `log.info({ req })` must not leak them either.
 */
export function createLogger(level: string, name = 'analytics'): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: [
        'authorization',
        '*.authorization',
        'req.headers.authorization',
        'headers.authorization',
        'password',
        '*.password',
        'secret',
        '*.secret',
        'api_secret',
        '*.api_secret',
        'private_key',
        '*.private_key',
        'config.password',
        'config.private_key',
        'config.connection_string',
      ],
      censor: '[redacted]',
    },
  });
}

export const silentLogger: Logger = pino({ level: 'silent' });
