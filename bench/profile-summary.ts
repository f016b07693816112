/**
 * `tsx bench/profile-summary.ts <file.cpuprofile> [top] [from-µs to-µs]`: a V8 CPU profile (node
 * --cpu-prof) as text — self time per function (with its file) and per package or source folder — for
 * docs/performance.md. Threads profile separately: node writes one file per thread.
 */
import fs from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Where a frame's code lives: a package name, a folder of this project, node's own, or V8. */
export function placeOf(url: string): string {
  if (!url) return '(native / V8)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return url;
  const own = /\/(src|bench|config|connectors|jobs)\/(.*\/)?[^/]+$/.exec(url);
  if (own) return `${own[1]}/${own[2] ?? ''}`.replace(/\/$/, '');
  return url;
}

/** `window`: only samples taken in [from, to], µs of the monotonic clock (process.hrtime). */
export function summarise(profile: Profile, top = 25, window?: { from: number; to: number }): string {
  const selfUs = new Map<number, number>();
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (window && (at < window.from || at > window.to)) continue;
    selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const byFn = new Map<string, number>();
  const byPlace = new Map<string, number>();
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.split('/').slice(-1)[0] ?? '';
    const fn = `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim();
    byFn.set(fn, (byFn.get(fn) ?? 0) + us);
    const place = placeOf(url);
    byPlace.set(place, (byPlace.get(place) ?? 0) + us);
  }
  const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
  const list = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => `${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`)
      .join('\n');
  return [`total sampled ${(total / 1000).toFixed(0)} ms`, '', 'self time by package / folder:', list(byPlace), '', 'self time by function:', list(byFn)].join('\n');
}

if (process.argv[1]?.endsWith('profile-summary.ts')) {
  const [file, top, from, to] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: tsx bench/profile-summary.ts <file.cpuprofile> [top] [from-µs to-µs]\n');
    process.exit(2);
  }
  const window = from && to ? { from: Number(from), to: Number(to) } : undefined;
  process.stdout.write(`${summarise(JSON.parse(fs.readFileSync(file, 'utf8')) as Profile, Number(top ?? 25), window)}\n`);
}
