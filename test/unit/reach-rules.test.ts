/** The reach decision (src/domain/reach-rules.ts): allow lists, the default refusals, own endpoints. */
import { describe, expect, it } from 'vitest';
import { isLocalAddress, isSocketPath, parseAllowedHosts, reachProblem, type ReachRules } from '../../src/domain/reach-rules.js';
import { ownEndpointHosts, ReachGuard } from '../../connectors/reach.js';
import { configFrom } from '../../config/index.js';

const byDefault: ReachRules = { ownAddresses: [{ address: '10.0.0.5', what: 'database' }] };
const target = (host: string, address = host, port = 5432) => ({ host, address, port });

describe('reach rules', () => {
  it('by default refuses loopback, link-local, unspecified and the service’s own hosts (any port), allows the rest', () => {
    for (const a of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1', '0.0.0.0', '::', '169.254.169.254', 'fe80::1', 'fd00:ec2::254']) {
      expect(isLocalAddress(a), a).toBe(true);
      expect(reachProblem(byDefault, target('db.example.com', a)), a).toMatch(/host not allowed: .*loopback or link-local/);
    }
    expect(reachProblem(byDefault, target('warehouse.internal', '10.0.0.5', 3306))).toMatch(/this service's own database/);
    expect(reachProblem(byDefault, target('10.0.0.6'))).toBeUndefined();
    expect(reachProblem(byDefault, target('2001:db8::1'))).toBeUndefined();
  });

  it('WAREHOUSE_ALLOWED_HOSTS: only the listed hosts, host:port pairs and CIDR ranges — loopback too when listed', () => {
    const rules: ReachRules = { allowed: parseAllowedHosts('db.example.com, 10.1.0.0/16, 127.0.0.1:5432, [::1]:3306, 2001:db8::/32'), ownAddresses: [] };
    expect(reachProblem(rules, target('db.example.com', '203.0.113.9'))).toBeUndefined();
    expect(reachProblem(rules, target('other.example.com', '10.1.200.3'))).toBeUndefined();
    expect(reachProblem(rules, target('127.0.0.1'))).toBeUndefined();
    expect(reachProblem(rules, target('127.0.0.1', '127.0.0.1', 6379))).toMatch(/not in this server's WAREHOUSE_ALLOWED_HOSTS/);
    expect(reachProblem(rules, target('::1', '::1', 3306))).toBeUndefined();
    expect(reachProblem(rules, target('x', '2001:db8:5::1'))).toBeUndefined();
    expect(reachProblem(rules, target('evil.example.com', '203.0.113.9'))).toMatch(/WAREHOUSE_ALLOWED_HOSTS/);
    expect(reachProblem(rules, target('x', '10.2.0.1'))).toMatch(/WAREHOUSE_ALLOWED_HOSTS/);
    expect(parseAllowedHosts('  ')).toBeUndefined();
    expect(() => parseAllowedHosts('10.0.0.0/40')).toThrow(/CIDR/);
    expect(() => parseAllowedHosts('host:99999')).toThrow(/host:port/);
  });

  it("a range in WAREHOUSE_ALLOWED_HOSTS does not admit the service's own endpoints; listing the host itself does", () => {
    const own = [{ address: '10.0.0.5', what: 'database' }];
    const range: ReachRules = { allowed: parseAllowedHosts('10.0.0.0/8'), ownAddresses: own };
    expect(reachProblem(range, target('warehouse.internal', '10.0.0.5'))).toMatch(/this service's own database; a range in WAREHOUSE_ALLOWED_HOSTS does not admit it/);
    expect(reachProblem(range, target('warehouse.internal', '10.0.0.6'))).toBeUndefined();
    for (const listed of ['10.0.0.0/8, 10.0.0.5', 'warehouse.internal', '10.0.0.5:5432']) {
      expect(reachProblem({ allowed: parseAllowedHosts(listed), ownAddresses: own }, target('warehouse.internal', '10.0.0.5')), listed).toBeUndefined();
    }
  });

  it('a bad WAREHOUSE_ALLOWED_HOSTS stops the service at start with the entry named', () => {
    expect(() => configFrom({ WAREHOUSE_ALLOWED_HOSTS: 'db.example.com,10.0.0.0/99' })).toThrow(/WAREHOUSE_ALLOWED_HOSTS: "10\.0\.0\.0\/99" is not a CIDR range/);
    expect(configFrom({ WAREHOUSE_ALLOWED_HOSTS: 'db.example.com, 10.0.0.0/8' }).WAREHOUSE_ALLOWED_HOSTS).toBe('db.example.com, 10.0.0.0/8');
  });

  it('recognises Unix socket paths', () => {
    for (const h of ['/var/run/postgresql', '/tmp/.s.PGSQL.5432', '@abstract', 'unix:/x', '%2Ftmp']) expect(isSocketPath(h), h).toBe(true);
    for (const h of ['db.example.com', '10.0.0.1', '::1']) expect(isSocketPath(h), h).toBe(false);
  });

  it('takes the service’s own endpoints from whichever config keys name them', () => {
    expect(
      ownEndpointHosts({
        WAREHOUSE_ALLOWED_HOSTS: '',
        DATABASE_URL: 'postgres://app:secret@pg.internal:5432/app',
        REDIS_URL: 'redis://cache.internal:6379',
        REDIS_CLUSTER_NODES: 'r1:7001,[fd00::1]:7002',
        EVENT_STORE_URL: 'clickhouse://ch.internal:8123/db',
      }),
    ).toEqual([
      { host: 'pg.internal', what: 'database' },
      { host: 'cache.internal', what: 'Redis' },
      { host: 'r1', what: 'Redis' },
      { host: 'fd00::1', what: 'Redis' },
      { host: 'ch.internal', what: 'event store' },
    ]);
    expect(ownEndpointHosts({ WAREHOUSE_ALLOWED_HOSTS: '', DATABASE_URL: './data/analytics.sqlite' })).toEqual([]);
  });

  it('a guard with an allow-list still knows its own endpoints: a listed range does not reach the database', async () => {
    const settings = (allowed: string) => ({ WAREHOUSE_ALLOWED_HOSTS: allowed, DATABASE_URL: 'postgres://app@127.0.0.7:5432/app' });
    const ranged = new ReachGuard(settings('127.0.0.0/8'));
    await expect(ranged.resolve('127.0.0.7', 5432)).rejects.toThrow(/own database; a range in WAREHOUSE_ALLOWED_HOSTS does not admit it/);
    await expect(ranged.resolve('127.0.0.8', 5432)).resolves.toBe('127.0.0.8');
    await expect(new ReachGuard(settings('127.0.0.0/8,127.0.0.7')).resolve('127.0.0.7', 5432)).resolves.toBe('127.0.0.7');
  });
});
