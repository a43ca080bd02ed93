import { describe, expect, it } from 'vitest';
import type { Store } from '../../core/ports/index.js';
import { accepted, item, rule } from './fixtures.js';
import { type StoreHarness } from './harness.js';

type Hold = NonNullable<Store['holdForTyping']>;

/** A fresh store and its typing hold; the case is skipped for a store without one (it is optional in the port). */
async function withHold(h: StoreHarness, skip: () => void): Promise<[Store, Hold]> {
  const store = await h.fresh();
  if (!store.holdForTyping) skip();
  return [store, (store.holdForTyping as Hold).bind(store)];
}

/**
 * A typing sender holds their open buffer (contract §13): later, never earlier, never past
 * maxWait, and never a buffer that is leased, retrying, closed by a command or absent. Skipped
 * for a store without the step (it is optional in the port).
 */
export function describeTyping(h: StoreHarness): void {
  describe('typing holds', () => {
    it('moves an open buffer to the end of the hold, and claims it then', async ({ skip }) => {
      const [store, hold] = await withHold(h, skip);
      expect(accepted((await store.admit([item('1', { at: 0 })], 0))[0]).deadline).toBe(1000);
      expect(await hold('s', 's', 3500, 500)).toBe(3500);
      expect(await store.nextDeadline()).toBe(3500);
      expect(await store.claimDue(3499, 100, 10)).toEqual([]);
      expect((await store.claimDue(3500, 100, 10)).map((b) => [b.reason, b.parts.length])).toEqual([['window', 1]]);
    });

    it('never shortens a deadline, and a later part re-arms the buffer from its parts', async ({ skip }) => {
      const [store, hold] = await withHold(h, skip);
      await store.admit([item('1', { at: 0 })], 0);
      expect(await hold('s', 's', 800, 100)).toBeUndefined();
      expect(await store.nextDeadline()).toBe(1000);
      expect(await hold('s', 's', 3000, 900)).toBe(3000);
      expect(accepted((await store.admit([item('2', { at: 2500 })], 2500))[0]).deadline).toBe(3500);
      expect((await store.claimDue(3500, 100, 10))[0]?.parts.map((p) => p.event.text)).toEqual(['1', '2']);
    });

    it('never holds past maxWait from the first part', async ({ skip }) => {
      const [store, hold] = await withHold(h, skip);
      await store.admit([item('1', { at: 0 })], 0);
      expect(await hold('s', 's', rule.maxWaitMs + 2000, 4000)).toBe(rule.maxWaitMs);
      expect(await hold('s', 's', rule.maxWaitMs + 3000, 4500)).toBeUndefined();
      expect((await store.claimDue(rule.maxWaitMs, 100, 10))[0]?.reason).toBe('max_wait');
    });

    it('leaves absent, leased, retrying and command-closed buffers as they are', async ({ skip }) => {
      const [store, hold] = await withHold(h, skip);
      expect(await hold('nobody', 'nobody', 3000, 0)).toBeUndefined();
      await store.admit([item('1', { at: 0 })], 0);
      const [batch] = await store.claimDue(1000, 10_000, 10);
      expect(await hold('s', 's', 5000, 1000)).toBeUndefined();
      await store.release(batch!, 2000);
      expect(await hold('s', 's', 5000, 1100)).toBeUndefined();
      expect(await store.nextDeadline()).toBe(2000);
      await store.admit([item('/go', { at: 0, sessionKey: 't', closeNow: true })], 0);
      expect(await hold('t', 't', 3000, 0)).toBeUndefined();
    });
  });
}
