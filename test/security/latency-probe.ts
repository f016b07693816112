/**
 * "The service keeps answering other projects meanwhile": while a hostile request runs, another
 * client polls a cheap endpoint and records the slowest answer. A blocked event loop shows up as
 * one long answer.
 */
export async function whileProbing<T>(url: string, action: () => Promise<T>, everyMs = 20): Promise<{ result: T; worstMs: number; probes: number }> {
  let worstMs = 0;
  let probes = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      await fetch(url).then((r) => r.arrayBuffer());
      worstMs = Math.max(worstMs, performance.now() - started);
      probes += 1;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  try {
    const result = await action();
    return { result, worstMs, probes };
  } finally {
    running = false;
    await loop;
  }
}
