/**
 * Each public surface has its own error shape. A router marks its requests with `surface(...)`;
 * the one error middleware reads the mark and answers in that shape.
 */
import type { NextFunction, Request, Response } from 'express';

export type Surface = 'ingest' | 'legacy' | 'app' | 'operator';

export function surface(name: Surface) {
  return (_req: Request, res: Response, next: NextFunction) => {
    res.locals.surface = name;
    next();
  };
}

export function surfaceOf(res: Response): Surface {
  return (res.locals.surface as Surface | undefined) ?? 'app';
}
