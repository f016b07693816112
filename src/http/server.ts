/** Listens over HTTPS when given a certificate and key (official SDKs refuse Basic auth over HTTP). */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { RequestListener } from 'node:http';
import type { Config } from '../../config/index.js';
import { answerClientError, MAX_HEADER_BYTES } from './client-error.js';

export async function listen(
  handler: RequestListener,
  config: Pick<Config, 'PORT' | 'HOST' | 'TLS_CERT_FILE' | 'TLS_KEY_FILE'>,
): Promise<{ server: http.Server; port: number; protocol: 'http' | 'https'; close: () => Promise<void> }> {
  const tls = config.TLS_CERT_FILE && config.TLS_KEY_FILE;
  const options = { maxHeaderSize: MAX_HEADER_BYTES };
  const server = tls
    ? https.createServer({ ...options, cert: fs.readFileSync(config.TLS_CERT_FILE!), key: fs.readFileSync(config.TLS_KEY_FILE!) }, handler)
    : http.createServer(options, handler);
  server.on('clientError', answerClientError);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    protocol: tls ? 'https' : 'http',
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections?.();
      }),
  };
}
