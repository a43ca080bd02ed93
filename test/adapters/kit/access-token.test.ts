import { describe, expect, it } from 'vitest';
import { AccessToken } from '../../../src/adapters/kit/access-token.js';
import { MemoryStore } from '../../../src/store/local/memory.js';
import { ManualClock } from '../../support/manual-clock.js';

describe('a platform access token shared by instances', () => {
  it('is fetched once for every instance and concurrent caller, kept until 5 min before it expires, then fetched again', async () => {
    const clock = new ManualClock(1_000_000);
    const store = new MemoryStore();
    let issued = 0;
    const issue = async () => ({ token: `t${++issued}`, expiresInMs: 7_200_000 });
    // Two instances: two AccessToken objects on one store.
    const a = new AccessToken('token:wx', { shared: store, now: clock.now }, issue);
    const b = new AccessToken('token:wx', { shared: store, now: clock.now }, issue);
    const signal = new AbortController().signal;
    expect(await Promise.all([a.get(signal), a.get(signal), a.get(signal)])).toEqual(['t1', 't1', 't1']);
    expect(await b.get(signal)).toBe('t1');
    clock.tick(7_200_000 - 300_001);
    expect(await b.get(signal)).toBe('t1');
    clock.tick(2);
    expect(await b.get(signal)).toBe('t2');
    expect(await a.get(signal)).toBe('t2');
    expect(issued).toBe(2);
  });

  it('fetches a new token after the platform refused the kept one, and a failed fetch keeps nothing', async () => {
    const clock = new ManualClock(1_000_000);
    const store = new MemoryStore();
    let issued = 0;
    let failing = false;
    const token = new AccessToken('token:lark', { shared: store, now: clock.now }, async () => {
      if (failing) throw new Error('platform down');
      return { token: `t${++issued}`, expiresInMs: 7_200_000 };
    });
    const signal = new AbortController().signal;
    expect(await token.get(signal)).toBe('t1');
    await token.invalidate();
    failing = true;
    await expect(token.get(signal)).rejects.toThrow('platform down');
    failing = false;
    expect(await token.get(signal)).toBe('t2');
  });
});
