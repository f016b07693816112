/** Bad input on an HTTP surface; one middleware maps it to that surface's error shape. */
export class ValidationError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ValidationError';
  }
}

export class NotFoundError extends ValidationError {
  constructor(message: string) {
    super(404, message);
    this.name = 'NotFoundError';
  }
}

/** A job failure worth another attempt (network blip, lock timeout). */
export class RetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryableError';
  }
}

/** A job failure no retry can fix (bad credentials, missing table); becomes UnrecoverableError. */
export class PermanentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentError';
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The event store cannot be reached or refuses work for now (server down, network, overload).
 * Retryable for jobs; HTTP answers 503 with Retry-After in the surface's error shape. Raised only
 * when the write is known not to have been acknowledged, so the client's retry is safe (dedupe).
 */
export class StoreUnavailableError extends RetryableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}
