/**
 * Runs the stand-in in its own process (so a memory measurement of the driver side is not
 * polluted by the stand-in's SQLite work). Driven over IPC by standin-process.ts.
 */
import { startSnowflakeStandin, type StandinHandle } from './standin.server.js';

let handle: StandinHandle | undefined;

process.on('message', (msg: { type: string; options?: Parameters<typeof startSnowflakeStandin>[0] }) => {
  void (async () => {
    try {
      if (msg.type === 'start') {
        handle = await startSnowflakeStandin(msg.options!);
        process.send!({ type: 'started', url: handle.url });
      } else if (msg.type === 'stats') {
        process.send!({ type: 'stats', stats: handle?.stats() });
      } else if (msg.type === 'close') {
        await handle?.close();
        process.send!({ type: 'closed' }, () => process.exit(0));
      }
    } catch (err) {
      process.send!({ type: 'error', error: err instanceof Error ? err.stack : String(err) });
    }
  })();
});
process.on('disconnect', () => process.exit(0));
