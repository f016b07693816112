import type { IncomingMessage } from 'node:http';

/** The query string of a request as sent (the first value wins when a name repeats, via `get`). */
export function queryOf(req: IncomingMessage): URLSearchParams {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  return new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
}
