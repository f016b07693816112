/** Listens over HTTPS when given a certificate and key (official SDKs refuse Basic auth over HTTP). */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { RequestListener } from 'node:http';
import type { Config } from '../../config/index.js';
import { errorMessage } from '../lib/errors.js';
import { answerClientError, MAX_HEADER_BYTES } from './client-error.js';

/** A file a variable names, or an error naming the variable (the bare ENOENT named neither). */
function readNamed(variable: string, file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new Error(`${variable}: cannot read ${file}: ${errorMessage(err)}`, { cause: err });
  }
}

/** A listen that failed, as one line naming the variable (a taken port was an unhandled 'error' stack). */
export function listenError(variable: string, port: number, host: string, err: NodeJS.ErrnoException): Error {
  return new Error(`${variable} ${port} on HOST ${host}: ${err.code === 'EADDRINUSE' ? 'already in use' : errorMessage(err)}`, { cause: err });
}

export async function listen(
  handler: RequestListener,
  config: Pick<Config, 'PORT' | 'HOST' | 'TLS_CERT_FILE' | 'TLS_KEY_FILE'>,
): Promise<{ server: http.Server; port: number; protocol: 'http' | 'https'; close: () => Promise<void> }> {
  // Config refuses one without the other; both or neither reach here.
  const tls = config.TLS_CERT_FILE && config.TLS_KEY_FILE;
  const options = { maxHeaderSize: MAX_HEADER_BYTES };

  // Shutdown: server.close() stops accepting and closes idle keep-alive sockets once; a socket
  // whose request was in flight would stay open (its response said keep-alive) and hold the
  // process to the shutdown deadline. So such responses say `Connection: close`, or, when their
  // headers were already sent, their socket is closed as soon as it goes idle.
  let closing = false;
  const inFlight = new Set<http.ServerResponse>();
  const tracked: RequestListener = (req, res) => {
    if (closing) res.setHeader('Connection', 'close');
    else {
      inFlight.add(res);
      res.once('close', () => inFlight.delete(res));
    }
    handler(req, res);
  };

  const server = tls
    ? https.createServer({ ...options, cert: readNamed('TLS_CERT_FILE', config.TLS_CERT_FILE!), key: readNamed('TLS_KEY_FILE', config.TLS_KEY_FILE!) }, tracked)
    : http.createServer(options, tracked);
  server.on('clientError', answerClientError);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenError('PORT', config.PORT, config.HOST, err)));
    server.listen(config.PORT, config.HOST, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    protocol: tls ? 'https' : 'http',
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        server.close(() => resolve());
        for (const res of inFlight) {
          if (!res.headersSent) res.setHeader('Connection', 'close');
          // Runs after Node's own finish handling has detached the socket, so it now counts as idle.
          else res.once('finish', () => server.closeIdleConnections());
        }
        server.closeIdleConnections();
      }),
  };
}
