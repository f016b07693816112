/**
 * One shutdown registry. Cleanups run in reverse order of registration (the last thing started
 * is the first stopped), `stop()` is idempotent, and a deadline bounds the whole thing.
 */
export type Cleanup = () => Promise<void> | void;

export class Lifecycle {
  private readonly cleanups: { name: string; fn: Cleanup }[] = [];
  private stopping: Promise<void> | undefined;

  register(name: string, fn: Cleanup): void {
    this.cleanups.push({ name, fn });
  }

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  stop(onError: (name: string, err: unknown) => void = () => {}): Promise<void> {
    this.stopping ??= (async () => {
      for (const { name, fn } of [...this.cleanups].reverse()) {
        try {
          await fn();
        } catch (err) {
          onError(name, err);
        }
      }
    })();
    return this.stopping;
  }
}

/** SIGTERM/SIGINT stop gracefully within `deadlineMs`; a second signal forces exit. */
export function installSignalHandlers(
  lifecycle: Lifecycle,
  deadlineMs: number,
  log: { info: (m: string) => void; error: (o: unknown, m: string) => void },
): void {
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) {
      log.info(`${signal} again: forcing exit`);
      process.exit(1);
    }
    log.info(`${signal}: shutting down (deadline ${deadlineMs} ms)`);
    const timer = setTimeout(() => {
      log.error({}, 'shutdown deadline passed: forcing exit');
      process.exit(1);
    }, deadlineMs);
    timer.unref();
    void lifecycle
      .stop((name, err) => log.error({ err, name }, 'cleanup failed'))
      .then(() => process.exit(0));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
