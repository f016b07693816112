/**
 * The import graph of src/, jobs/ and connectors/ has no cycles. A cycle is how run machinery
 * used to be copied per kind (jobs/reconcile-sources.ts and the *.reconcile.ts files imported each
 * other); eslint.config.js forbids that particular edge, this test forbids every cycle.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DIRS = ['src', 'jobs', 'connectors', 'config'];

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Relative imports of a file, resolved to .ts paths. `import type` edges count too: they are still coupling. */
function importsOf(file: string, known: Set<string>): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/g)) {
    const target = path.resolve(path.dirname(file), m[1]!).replace(/\.js$/, '.ts');
    if (known.has(target)) out.push(target);
  }
  return out;
}

export function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): string[] | undefined => {
    state.set(n, 'open');
    stack.push(n);
    for (const next of graph.get(n) ?? []) {
      if (state.get(next) === 'open') return [...stack.slice(stack.indexOf(next)), next];
      if (!state.has(next)) {
        const c = visit(next);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(n, 'done');
    return undefined;
  };
  for (const n of graph.keys()) {
    if (!state.has(n)) {
      const c = visit(n);
      if (c) return c;
    }
  }
  return undefined;
}

describe('architecture', () => {
  it('the cycle finder finds a cycle (so the check below can fail)', () => {
    const g = new Map([
      ['jobs/reconcile-sources.ts', ['jobs/x.reconcile.ts']],
      ['jobs/x.reconcile.ts', ['jobs/reconcile-sources.ts']],
    ]);
    expect(findCycle(g)).toEqual(['jobs/reconcile-sources.ts', 'jobs/x.reconcile.ts', 'jobs/reconcile-sources.ts']);
  });

  it('no import cycle in src/, jobs/, connectors/ or config/', () => {
    const files = DIRS.flatMap((d) => tsFiles(path.join(ROOT, d)));
    const known = new Set(files);
    const graph = new Map(files.map((f) => [f, importsOf(f, known)]));
    const cycle = findCycle(graph)?.map((f) => path.relative(ROOT, f));
    expect(cycle, `import cycle: ${cycle?.join(' → ')}`).toBeUndefined();
  });

  it('no run kind in jobs/ imports the list of kinds', () => {
    for (const f of tsFiles(path.join(ROOT, 'jobs')).filter((f) => /\.(reconcile|job|handler)\.ts$/.test(f))) {
      expect(fs.readFileSync(f, 'utf8'), path.relative(ROOT, f)).not.toMatch(/from\s+['"]\.\/(reconcile-sources|index)\.js['"]/);
    }
  });
});
