/**
 * One-at-a-time per key inside this process: callers with the same key run in arrival order,
 * other keys run freely. Used where a store must read-then-write without a transaction.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, f: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await f();
    } finally {
      release();
      // The last one out forgets the key, so the map does not grow with every project ever seen.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
