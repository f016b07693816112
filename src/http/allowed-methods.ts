/**
 * The methods some route of the app takes on a path, read from express's own routing table, so
 * a request that reaches the 404 handler on a path that exists under another method is answered
 * 405 with `Allow` (every surface, without listing each path's methods twice). Mounted routers
 * are searched with the rest of the path, as express itself dispatches it.
 */
import type { Application } from 'express';

interface LayerLike {
  route?: { methods: Record<string, boolean | undefined> };
  handle?: { stack?: LayerLike[] };
  match(path: string): false | { path: string };
}

const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

function collect(stack: readonly LayerLike[], path: string, out: Set<string>): void {
  for (const layer of stack) {
    let matched: false | { path: string };
    try {
      matched = layer.match(path);
    } catch {
      continue; // a path express cannot decode matches nothing
    }
    if (!matched) continue;
    if (layer.route) {
      for (const [method, on] of Object.entries(layer.route.methods)) if (on && method !== '_all') out.add(method.toUpperCase());
    } else if (layer.handle?.stack) {
      const rest = path.slice(matched.path.length);
      collect(layer.handle.stack, rest.startsWith('/') ? rest : `/${rest}`, out);
    }
  }
}

export function allowedMethods(app: Application, path: string): string[] {
  const stack = (app as unknown as { router?: { stack?: LayerLike[] } }).router?.stack;
  if (!stack) return [];
  const out = new Set<string>();
  collect(stack, path, out);
  return [...out].sort((a, b) => (ORDER.indexOf(a) + 1 || 99) - (ORDER.indexOf(b) + 1 || 99));
}
