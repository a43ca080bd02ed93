import { describe, expect, it } from 'vitest';
import { accepted, item, rule } from './fixtures.js';
import { type StoreHarness } from './harness.js';

/** When a buffer closes: its window, maxWait, maxMessages (an album once) and a command. */
export function describeDeadlines(h: StoreHarness): void {
  describe('deadlines', () => {
    it('closes a quiet buffer one window after its last part', async () => {
      const store = await h.fresh();
      await store.admit([item('1', { at: 0 })], 0);
      expect(accepted((await store.admit([item('2', { at: 800 })], 800))[0]).deadline).toBe(1800);
      expect(await store.nextDeadline()).toBe(1800);
      expect(await store.claimDue(1799, 100, 10)).toEqual([]);
      expect((await store.claimDue(1800, 100, 10)).map((b) => [b.reason, b.parts.length])).toEqual([['window', 2]]);
    });

    it('closes a busy buffer at maxWait after its first part', async () => {
      const store = await h.fresh();
      const busy = { ...rule, maxWaitMs: 1500 };
      await store.admit([item('1', { at: 0, rule: busy })], 0);
      expect(accepted((await store.admit([item('2', { at: 800, rule: busy })], 800))[0]).deadline).toBe(1500);
      expect((await store.claimDue(1500, 100, 10))[0]?.reason).toBe('max_wait');
    });

    it('closes at maxMessages counting an album once', async () => {
      const store = await h.fresh();
      const three = { ...rule, maxMessages: 3 };
      const album = await store.admit(
        [1, 2, 3].map((n) => item(`a${n}`, { at: 10, unit: 'album', rule: three })),
        10,
      );
      expect(accepted(album[2]).deadline).toBe(1010);
      expect(accepted((await store.admit([item('b', { at: 20, rule: three })], 20))[0]).deadline).toBe(1020);
      expect(accepted((await store.admit([item('c', { at: 30, rule: three })], 30))[0]).deadline).toBe(30);
      const [batch] = await store.claimDue(30, 100, 10);
      expect(batch?.reason).toBe('count');
      expect(batch?.parts).toHaveLength(5);
    });

    it('closes at once on a command, with the command last', async () => {
      const store = await h.fresh();
      await store.admit([item('hello', { at: 0 })], 0);
      expect(accepted((await store.admit([item('/reset', { at: 5, closeNow: true })], 5))[0]).deadline).toBe(5);
      const [batch] = await store.claimDue(5, 100, 10);
      expect(batch?.reason).toBe('command');
      expect(batch?.parts.map((p) => p.event.text)).toEqual(['hello', '/reset']);
    });
  });
}
