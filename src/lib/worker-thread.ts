import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts a worker thread on the module `./<name>.js` beside `callerUrl` (pass `import.meta.url`).
 * From compiled JS that is the file itself; from TypeScript sources (tsx, vitest) the thread
 * registers tsx first and then loads `./<name>.ts`, so the same code runs in both.
 */
export function startModuleWorker(callerUrl: string, name: string, options: WorkerOptions = {}): Worker {
  if (!callerUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, callerUrl), options);
  const api = import.meta.resolve('tsx/esm/api');
  const entry = new URL(`./${name}.ts`, callerUrl).href;
  const boot = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(boot, { ...options, eval: true });
}
