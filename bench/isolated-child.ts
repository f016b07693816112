process.once('message', async (msg: { url: string; exportName: string; args: unknown }) => {
  try {
    const mod = (await import(msg.url)) as Record<string, (args: unknown) => Promise<unknown>>;
    const result = await mod[msg.exportName]!(msg.args);
    process.send!({ ok: true, result, maxRssKb: process.resourceUsage().maxRSS }, () => process.exit(0));
  } catch (err) {
    process.send!({ ok: false, error: err instanceof Error ? err.stack : String(err), maxRssKb: 0 }, () => process.exit(1));
  }
});
