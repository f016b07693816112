/**
 * The client's credentials from a service-account key, as the library authenticates: a JWT client
 * (google-auth-library) signs an assertion with the key's private key and exchanges it for an
 * access token, which every API request then carries as a Bearer token.
 *
 * One addition: the library posts the assertion to Google's token URL whatever the key says, so
 * the transporter sends that request to the key's own `token_uri` instead (the same URL for every
 * key Google issues; a different one for a key made for a private endpoint or a test stand-in).
 */
import http from 'node:http';
import https from 'node:https';
import { JWT } from 'google-auth-library';
import type { ReachGuard } from '../reach.js';
import { GOOGLE_TOKEN_URL, type ServiceAccountKey } from './bigquery-options.js';

export const BIGQUERY_SCOPE = 'https://www.googleapis.com/auth/bigquery';

/**
 * `reach`: the token request's sockets resolve their host through the reach rules (an http(s)
 * agent with the guard's lookup), so a key cannot point the service at a forbidden address.
 */
export function jwtClient(key: ServiceAccountKey, projectId: string, reach?: ReachGuard): JWT {
  const client = new JWT({
    email: key.client_email,
    key: key.private_key,
    keyId: key.private_key_id,
    scopes: [BIGQUERY_SCOPE],
    projectId,
  });
  const target = new URL(key.token_uri);
  const secure = target.protocol === 'https:';
  const port = Number(target.port) || (secure ? 443 : 80);
  const agent = reach ? new (secure ? https.Agent : http.Agent)({ lookup: reach.lookup(port), keepAlive: true }) : undefined;
  client.transporter.interceptors.request.add({
    resolved: async (opts) => {
      if (String(opts.url) === GOOGLE_TOKEN_URL) {
        opts.url = new URL(target);
        if (reach && agent) {
          // Node skips an agent's lookup for an IP-literal host, so check the host here too;
          // the agent's lookup keeps a host name's resolution the checked one (no rebinding).
          await reach.resolve(target.hostname, port);
          opts.agent = agent;
        }
      }
      return opts;
    },
  });
  return client;
}
