/**
 * Group commit per key: calls that arrive while a commit for their key is running wait, and the
 * next commit takes all of them at once (up to `maxItems` weight). Nothing waits for a timer —
 * an idle key commits a lone call immediately — so grouping costs no latency and kicks in
 * exactly when calls pile up. Each caller gets its own result, or the shared error: a call is
 * acknowledged only by the commit that carried it.
 */
interface Pending<T, R> {
  item: T;
  resolve: (r: R) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit<T, R> {
  private readonly queues = new Map<string, Pending<T, R>[]>();

  constructor(
    /** Commits a group; returns one result per item, in order. */
    private readonly commit: (key: string, items: T[]) => Promise<R[]>,
    /** Weight of an item (e.g. its rows) and the most one group may carry (a lone heavier item still goes alone). */
    private readonly weight: (item: T) => number,
    private readonly maxWeight: number,
  ) {}

  submit(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const queue = this.queues.get(key);
      if (queue) {
        queue.push({ item, resolve, reject });
        return;
      }
      this.queues.set(key, [{ item, resolve, reject }]);
      void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    for (;;) {
      const queue = this.queues.get(key)!;
      if (queue.length === 0) {
        this.queues.delete(key);
        return;
      }
      let n = 0;
      let w = 0;
      while (n < queue.length && (n === 0 || w + this.weight(queue[n]!.item) <= this.maxWeight)) w += this.weight(queue[n++]!.item);
      const group = queue.splice(0, n);
      try {
        const results = await this.commit(
          key,
          group.map((p) => p.item),
        );
        group.forEach((p, i) => p.resolve(results[i]!));
      } catch (err) {
        for (const p of group) p.reject(err);
      }
    }
  }
}
