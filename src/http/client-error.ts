/**
 * Requests Node's HTTP parser refuses before express sees them: a request line and headers over
 * the limit, a malformed request, a request that took too long. Without a listener Node answers
 * with an empty body (a bare 431 the official SDK reports as "Mixpanel Server Error: "). Here
 * the answer says what went wrong, in the ingestion error shape, since the surface (and any
 * Origin for CORS) is unknown before the request is parsed.
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Request line plus headers. The legacy SDK form sends a whole event in `GET …?data=<base64>`
 * (the official Node SDK sends every single call that way), and one event may be 1 MB: its
 * base64 and URL encoding stay under 2 MiB. Node's default, 16 KiB, refused events of ~12 KB.
 */
export const MAX_HEADER_BYTES = 2 * 1024 * 1024;

function answerOf(code: string | undefined): { status: number; message: string } {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return { status: 431, message: `the request line and headers exceed ${MAX_HEADER_BYTES / 1024 / 1024} MiB: send large payloads in a POST body` };
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, message: 'the request was not received in time' };
  return { status: 400, message: 'malformed HTTP request' };
}

export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A peer that hung up (or a socket already answered) gets nothing more.
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const { status, message } = answerOf(err.code);
  const reason = http.STATUS_CODES[status] ?? 'Error';
  const body = JSON.stringify({ code: status, error: message, status: reason });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}
