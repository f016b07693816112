/**
 * The reach rules at connect time (decision: src/domain/reach-rules.ts). Every network source
 * resolves its host HERE and connects to the exact address returned, so what was checked is what
 * is reached: a name that resolves to a public address now and to 127.0.0.1 a moment later (DNS
 * rebinding) cannot slip through. The service's own endpoints are taken from the config keys
 * that name them (whichever of them this deployment sets), resolved when first needed.
 *
 * Use (any connector):
 *   const guard = reachGuard(settings);
 *   const address = await guard.resolve(host, port);   // throws WarehouseError (permanent) when refused
 *   connect(address, port)  — and, for TLS, servername: host
 * `guard.lookup` is the same check as a net.LookupFunction, for clients that take one (http
 * agents: `new https.Agent({ lookup: guard.lookup })`).
 */
import dns from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import type { Config } from '../config/index.js';
import { isSocketPath, parseAllowedHosts, reachProblem, type ReachRules } from '../src/domain/reach-rules.js';
import { WarehouseError } from './warehouse.js';

/** Config keys that name this service's own endpoints (URLs, or comma-separated host:port lists). */
const OWN_ENDPOINT_KEYS: Record<string, string> = {
  DATABASE_URL: 'database',
  REDIS_URL: 'Redis',
  REDIS_CLUSTER_NODES: 'Redis',
  EVENT_STORE_URL: 'event store',
};

export type ReachSettings = Pick<Config, 'WAREHOUSE_ALLOWED_HOSTS'> & Partial<Record<string, unknown>>;

/** The hosts named by the own-endpoint config keys that are set. */
export function ownEndpointHosts(settings: ReachSettings): { host: string; what: string }[] {
  const out: { host: string; what: string }[] = [];
  for (const [key, what] of Object.entries(OWN_ENDPOINT_KEYS)) {
    const value = settings[key];
    if (typeof value !== 'string' || value.trim() === '') continue;
    for (const part of value.split(',')) {
      const host = hostOf(part.trim());
      if (host) out.push({ host, what });
    }
  }
  return out;
}

function hostOf(endpoint: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint)) {
    try {
      const h = new URL(endpoint).hostname.replace(/^\[|\]$/g, '');
      return h || 'localhost';
    } catch {
      return undefined;
    }
  }
  // host:port (a cluster node list); a bare file path (a SQLite DATABASE_URL) names no host.
  const m = /^([^/:]+|\[[^\]]+\]):\d+$/.exec(endpoint);
  return m ? m[1]!.replace(/^\[|\]$/g, '') : undefined;
}

/**
 * The addresses of this machine's own network interfaces besides loopback (192.0.2.2, say): a
 * source aimed at one reaches every service here that listens on all interfaces, this one
 * included. Loopback is refused by the rules themselves. Read when a guard first checks a host,
 * as the endpoints are.
 */
function machineAddresses(): ReachRules['ownAddresses'] {
  return Object.values(os.networkInterfaces())
    .flatMap((list) => list ?? [])
    .filter((i) => !i.internal)
    .map((i) => ({ address: i.address, what: 'machine (an address of one of its network interfaces)' }));
}

async function addressesOf(host: string): Promise<{ address: string; family: number }[]> {
  const family = net.isIP(host);
  if (family) return [{ address: host, family }];
  return dns.lookup(host, { all: true, verbatim: true });
}

export class ReachGuard {
  private own?: Promise<ReachRules['ownAddresses']>;
  private readonly allowed: ReachRules['allowed'];

  constructor(
    private readonly settings: ReachSettings,
    /** Extra allowed hosts for this source type (an operator-listed Snowflake access URL). */
    private readonly alsoAllowed: string[] = [],
  ) {
    this.allowed = parseAllowedHosts(settings.WAREHOUSE_ALLOWED_HOSTS);
  }

  private ownAddresses(): Promise<ReachRules['ownAddresses']> {
    this.own ??= Promise.all(
      ownEndpointHosts(this.settings).map(async ({ host, what }) => {
        try {
          return (await addressesOf(host)).map((a) => ({ address: a.address, what }));
        } catch {
          return []; // an own endpoint that does not resolve cannot be reached through a source either
        }
      }),
    ).then((lists) => [...lists.flat(), ...machineAddresses()]);
    return this.own;
  }

  /** Resolves `host` and checks every address it resolves to; returns the one to connect to. */
  async resolve(host: string, port: number): Promise<string> {
    const h = host.trim().replace(/^\[|\]$/g, '');
    if (h === '' || isSocketPath(h)) {
      throw new WarehouseError(`host not allowed: ${JSON.stringify(host)} is a Unix socket or local path; warehouse sources connect over the network only`);
    }
    let addresses: { address: string; family: number }[];
    try {
      addresses = await addressesOf(h);
    } catch (err) {
      const code = (err as { code?: string }).code;
      throw new WarehouseError(`unknown host: ${h} does not resolve (${code ?? 'DNS error'}); check the host name`, code === 'EAI_AGAIN');
    }
    if (addresses.length === 0) throw new WarehouseError(`unknown host: ${h} does not resolve; check the host name`);
    // A host the operator listed for this source type (a Snowflake access URL) is allowed as if
    // it were in WAREHOUSE_ALLOWED_HOSTS.
    if (this.alsoAllowed.some((x) => x.toLowerCase() === h.toLowerCase())) return addresses[0]!.address;
    const rules: ReachRules = { allowed: this.allowed, ownAddresses: await this.ownAddresses() };
    for (const a of addresses) {
      const problem = reachProblem(rules, { host: h, port, address: a.address });
      if (problem) throw new WarehouseError(problem);
    }
    return addresses[0]!.address;
  }

  /**
   * The same check as a net.LookupFunction for clients that resolve names themselves (http
   * agents: `new https.Agent({ lookup: guard.lookup(443) })`); `port` is the port they connect to.
   */
  lookup(port: number): LookupFunction {
    return (hostname, options, callback) => {
      this.resolve(hostname, port).then(
        (address) => {
          const family = net.isIP(address);
          if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
          else callback(null, address, family);
        },
        (err: Error) => callback(Object.assign(err, { code: 'EREACH' }) as NodeJS.ErrnoException, '', 0),
      );
    };
  }
}

/** The reach guard for a server's settings. */
export function reachGuard(settings: ReachSettings, alsoAllowed: string[] = []): ReachGuard {
  return new ReachGuard(settings, alsoAllowed);
}
