/**
 * CPU time of the store's own server, read from /proc, so a bench can say where the CPU goes
 * beside the service's: ClickHouse is one process; PostgreSQL is a postmaster whose backends
 * come and go (a finished backend's time moves into the postmaster's children's time). Found by
 * the TCP port the server listens on. Undefined where it cannot be read (another machine, no
 * /proc); SQLite has no server.
 */
import fs from 'node:fs';

const TICKS = 100; // USER_HZ on Linux

function statFields(pid: number): string[] | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  } catch {
    return undefined;
  }
}

/** Socket inodes listening on `port` (IPv4 and IPv6). */
function listeningInodes(port: number): Set<string> {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const out = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[1]!.endsWith(`:${hex}`) && f[3] === '0A') out.add(f[9]!);
    }
  }
  return out;
}

function listeningPid(port: number): number | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${entry}/fd/${fd}`));
        if (m && inodes.has(m[1]!)) return Number(entry);
      } catch {
        // The descriptor closed meanwhile.
      }
    }
  }
  return undefined;
}

function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** A reader of the server's CPU seconds so far, or undefined when its process cannot be found. */
export function storeServerCpu(kind: 'postgres' | 'clickhouse', url: string): (() => number) | undefined {
  const parsed = new URL(url);
  const port = Number(parsed.port || (kind === 'postgres' ? 5432 : 8123));
  const pid = listeningPid(port);
  if (pid === undefined) return undefined;
  return () => {
    const f = statFields(pid);
    if (!f) return 0;
    // utime + stime, plus (PostgreSQL) the finished backends' cutime + cstime and the live ones'.
    let ticks = Number(f[11]) + Number(f[12]);
    if (kind === 'postgres') {
      ticks += Number(f[13]) + Number(f[14]);
      for (const child of childrenOf(pid)) {
        const c = statFields(child);
        if (c) ticks += Number(c[11]) + Number(c[12]);
      }
    }
    return ticks / TICKS;
  };
}
