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

    it("refuses the cursor write of a paused holder whose lease ran out and was taken over, and keeps the survivor's", async () => {
      const store = await h.fresh();
      const late = (await store.holdLease('conn:tg', 'a', 1000, T)) as number;
      expect(await store.fencedPut('conn:tg', late, 'cursor:tg', '10', 60_000, T)).toBe(true);
      expect(await store.fenceHolds('conn:tg', late)).toBe(true);
      // "a" pauses past its lease; "b" takes it over and moves the cursor on.
      const survivor = (await store.holdLease('conn:tg', 'b', 1000, T + 1000)) as number;
      expect(await store.fencedPut('conn:tg', survivor, 'cursor:tg', '12', 60_000, T + 1001)).toBe(true);
      // "a" wakes and writes the cursor of what it polled before the pause: refused, nothing written.
      expect(await store.fenceHolds('conn:tg', late)).toBe(false);
      expect(await store.fencedPut('conn:tg', late, 'cursor:tg', '11', 60_000, T + 1002)).toBe(false);
      expect(await store.sharedGet('cursor:tg', T + 1003)).toBe('12');
      expect(await store.fenceHolds('conn:tg', survivor)).toBe(true);
    });

    it('lets a holder whose time is up write while nobody took the lease, and refuses a fence never handed out', async () => {
      const store = await h.fresh();
      const fence = (await store.holdLease('conn:tg', 'a', 1000, T)) as number;
      await store.dropLease('conn:tg', 'a');
      // Fences order hands, not clocks: the lease did not change hands, so its last hand's work still lands.
      expect(await store.fencedPut('conn:tg', fence, 'cursor:tg', '10', 60_000, T + 5000)).toBe(true);
      expect(await store.fencedPut('conn:tg', fence + 1, 'cursor:tg', '11', 60_000, T + 5001)).toBe(false);
      expect(await store.fencedPut('conn:none', 1, 'cursor:none', '1', 60_000, T + 5001)).toBe(false);
      expect(await store.fenceHolds('conn:none', 1)).toBe(false);
      expect(await store.sharedGet('cursor:tg', T + 5002)).toBe('10');
      expect(await store.sharedGet('cursor:none', T + 5002)).toBeUndefined();
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
