import { describe, expect, it } from 'vitest';
import { type StoreHarness } from './harness.js';

/**
 * Named leases (what only one instance may hold: a channel's outgoing connection), on the
 * caller's clock. Memory and SQLite run the TypeScript rule (store/rules/lease.ts), Redis its
 * Lua twin: the same cases hold on both.
 */
export function describeLeases(h: StoreHarness): void {
  describe('named leases', () => {
    const T = 1_000_000;

    it('gives a free lease to its first holder, renews it for that holder only, and refuses others while it runs', async () => {
      const store = await h.fresh();
      const fence = await store.holdLease('conn:qq', 'a', 1000, T);
      expect(fence).toBeTypeOf('number');
      expect(await store.holdLease('conn:qq', 'b', 1000, T + 10)).toBeUndefined();
      expect(await store.holdLease('conn:qq', 'a', 1000, T + 900)).toBe(fence);
      // Renewed at T + 900: still running at T + 1500, where the first lease would have ended.
      expect(await store.holdLease('conn:qq', 'b', 1000, T + 1500)).toBeUndefined();
      expect(await store.holdLease('conn:other', 'b', 1000, T + 1500)).toBeTypeOf('number');
    });

    it('hands a lease whose time is up to the next holder with a greater fence, and the old holder is refused after', async () => {
      const store = await h.fresh();
      const first = (await store.holdLease('conn:qq', 'a', 1000, T)) as number;
      const second = await store.holdLease('conn:qq', 'b', 1000, T + 1000);
      expect(second).toBeGreaterThan(first);
      expect(await store.holdLease('conn:qq', 'a', 1000, T + 1001)).toBeUndefined();
    });

    it('lets the next holder take a dropped lease at once; a drop by another holder changes nothing', async () => {
      const store = await h.fresh();
      const first = (await store.holdLease('conn:qq', 'a', 60_000, T)) as number;
      await store.dropLease('conn:qq', 'b');
      expect(await store.holdLease('conn:qq', 'b', 60_000, T + 1)).toBeUndefined();
      await store.dropLease('conn:qq', 'a');
      const second = (await store.holdLease('conn:qq', 'b', 60_000, T + 2)) as number;
      expect(second).toBeGreaterThan(first);
      // The fence keeps growing across drops: a holder coming back is a new hand.
      await store.dropLease('conn:qq', 'b');
      expect(await store.holdLease('conn:qq', 'a', 60_000, T + 3)).toBeGreaterThan(second);
    });

    it('keeps a shared value for its time, replaces it on a new put, and forgets it after', async () => {
      const store = await h.fresh();
      expect(await store.sharedGet('token:wx', T)).toBeUndefined();
      await store.sharedPut('token:wx', 'first', 60_000, T);
      expect(await store.sharedGet('token:wx', T + 1)).toBe('first');
      await store.sharedPut('token:wx', 'second', 60_000, T + 2);
      expect(await store.sharedGet('token:wx', T + 3)).toBe('second');
      expect(await store.sharedGet('token:other', T + 3)).toBeUndefined();
    });
  });
}
