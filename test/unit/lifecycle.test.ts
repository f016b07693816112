import { describe, expect, it } from 'vitest';
import { Lifecycle } from '../../src/lib/lifecycle.js';

describe('shutdown registry', () => {
  it('runs cleanups once, in reverse order, even when one fails', async () => {
    const order: string[] = [];
    const failures: string[] = [];
    const l = new Lifecycle();
    l.register('db', () => void order.push('db'));
    l.register('redis', () => {
      order.push('redis');
      throw new Error('boom');
    });
    l.register('http', async () => void order.push('http'));
    await Promise.all([l.stop((name) => failures.push(name)), l.stop()]);
    await l.stop();
    expect(order).toEqual(['http', 'redis', 'db']);
    expect(failures).toEqual(['redis']);
    expect(l.isStopping).toBe(true);
  });
});
