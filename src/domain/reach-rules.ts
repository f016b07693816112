/**
 * What a warehouse source may reach: the pure decision behind connectors/reach.ts. A source is
 * a tenant-supplied host; left unchecked, it turns the service into a proxy onto its own network
 * (its database, Redis, ClickHouse, anything on loopback). The operator decides:
 *   - WAREHOUSE_ALLOWED_HOSTS set (hosts, host:port or CIDR, comma-separated): only those, and
 *     the service's own endpoints only when listed by host or address, never through a range
 *     (`10.0.0.0/8` meant for warehouses must not also hand tenants the system database);
 *   - unset: anything except loopback, link-local (cloud metadata lives there, and at AWS's
 *     IPv6 metadata address), unspecified addresses (0.0.0.0 connects to the local machine),
 *     Unix sockets, the addresses of this machine's own network interfaces (they connect to
 *     the local machine as loopback does: to every service listening on all interfaces), and
 *     the hosts of the service's own endpoints (database, Redis, event store — on any port:
 *     ClickHouse and others speak several protocols on neighbouring ports).
 * The decision is made on the address a name RESOLVED to, the one actually connected to, so a
 * name that resolves differently later (DNS rebinding) cannot slip through.
 */
import net from 'node:net';

export type AllowEntry = { kind: 'host'; host: string; port?: number } | { kind: 'cidr'; list: net.BlockList; text: string };

export interface ReachRules {
  /** Undefined: the default rules; otherwise only these (WAREHOUSE_ALLOWED_HOSTS). */
  allowed?: AllowEntry[];
  /** Resolved addresses of the service's own endpoints (refused by the default rules). */
  ownAddresses: { address: string; what: string }[];
}

/** A connection attempt as seen by the rules: the host as the user wrote it, and where it resolved. */
export interface ReachTarget {
  host: string;
  port: number;
  /** The resolved IP address (an IP literal resolves to itself). */
  address: string;
}

const lower = (s: string) => s.trim().toLowerCase().replace(/^\[|\]$/g, '');

/** Parses WAREHOUSE_ALLOWED_HOSTS; throws with a message naming the bad entry. Empty → undefined (default rules). */
export function parseAllowedHosts(text: string): AllowEntry[] | undefined {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (items.length === 0) return undefined;
  return items.map((item) => {
    const slash = item.indexOf('/');
    if (slash !== -1) {
      const ip = lower(item.slice(0, slash));
      const bits = Number(item.slice(slash + 1));
      const family = net.isIP(ip);
      if (!family || !Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128)) {
        throw new Error(`WAREHOUSE_ALLOWED_HOSTS: ${JSON.stringify(item)} is not a CIDR range like 10.0.0.0/8`);
      }
      const list = new net.BlockList();
      list.addSubnet(ip, bits, family === 4 ? 'ipv4' : 'ipv6');
      return { kind: 'cidr', list, text: item };
    }
    // host, host:port, [v6]:port, or a bare IPv6 address
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(item) ?? (net.isIPv6(item) ? null : /^([^:]+)(?::(\d+))?$/.exec(item));
    const host = m ? m[1]! : item;
    const port = m?.[2] === undefined ? undefined : Number(m[2]);
    if (!host || (port !== undefined && (port < 1 || port > 65535))) {
      throw new Error(`WAREHOUSE_ALLOWED_HOSTS: ${JSON.stringify(item)} is not a host, host:port or CIDR range`);
    }
    return { kind: 'host', host: lower(host), port };
  });
}

/** An IPv4-mapped IPv6 address (::ffff:1.2.3.4) as its IPv4 form; otherwise the address lower-cased. */
export function canonicalAddress(address: string): string {
  const a = lower(address);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  return mapped ? mapped[1]! : a;
}

const special = new net.BlockList();
special.addSubnet('127.0.0.0', 8, 'ipv4');
special.addSubnet('0.0.0.0', 8, 'ipv4');
special.addSubnet('169.254.0.0', 16, 'ipv4');
special.addAddress('::1', 'ipv6');
special.addAddress('::', 'ipv6');
special.addSubnet('fe80::', 10, 'ipv6');
// AWS's instance metadata over IPv6 (Nitro): not link-local, but the same endpoint as 169.254.169.254.
special.addAddress('fd00:ec2::254', 'ipv6');

/** Loopback, link-local, unspecified or a cloud metadata address: the local machine or its link. */
export function isLocalAddress(address: string): boolean {
  const a = canonicalAddress(address);
  const family = net.isIP(a);
  if (!family) return false;
  return special.check(a, family === 4 ? 'ipv4' : 'ipv6');
}

/** A host string that names a Unix socket rather than a network host. */
export function isSocketPath(host: string): boolean {
  const h = host.trim();
  return h.startsWith('/') || h.startsWith('@') || h.startsWith('.') || /^unix:/i.test(h) || h.includes('\\') || h.includes('%2f') || h.includes('%2F');
}

function entryMatches(e: AllowEntry, t: ReachTarget): boolean {
  const address = canonicalAddress(t.address);
  if (e.kind === 'cidr') {
    const family = net.isIP(address);
    return family !== 0 && e.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
  if (e.port !== undefined && e.port !== t.port) return false;
  // A listed name allows what it resolves to at connect time; a listed IP allows that address.
  return e.host === lower(t.host) || canonicalAddress(e.host) === address;
}

/** Why `target` may not be reached, in words an operator or data engineer acts on; undefined = allowed. */
export function reachProblem(rules: ReachRules, target: ReachTarget): string | undefined {
  const where = target.host === target.address ? `${target.host}:${target.port}` : `${target.host}:${target.port} (${target.address})`;
  const address = canonicalAddress(target.address);
  const own = rules.ownAddresses.find((o) => canonicalAddress(o.address) === address);
  if (rules.allowed) {
    const matches = rules.allowed.filter((e) => entryMatches(e, target));
    if (matches.length === 0) return `host not allowed: ${where} is not in this server's WAREHOUSE_ALLOWED_HOSTS; ask the operator to add it`;
    if (own && !matches.some((e) => e.kind === 'host')) {
      return `host not allowed: ${where} is this service's own ${own.what}; a range in WAREHOUSE_ALLOWED_HOSTS does not admit it, only the host itself listed`;
    }
    return undefined;
  }
  if (own) return `host not allowed: ${where} is this service's own ${own.what}, which a warehouse source may not reach`;
  if (isLocalAddress(address)) {
    return `host not allowed: ${where} is a loopback or link-local address, which warehouse sources may not reach (an operator can allow hosts with WAREHOUSE_ALLOWED_HOSTS)`;
  }
  return undefined;
}
