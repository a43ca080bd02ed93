import { describe, expect, it } from 'vitest';
import { accepted, item, verdicts } from './fixtures.js';
import { type StoreHarness } from './harness.js';

/** Admission: claims refuse an item whole, part ids grow, the deadline comes back. */
export function describeAdmit(h: StoreHarness): void {
  describe('admit', () => {
    it('claims in order and records nothing of an item refused by a claim', async () => {
      const store = await h.fresh();
      const results = await store.admit(
        [item('1', { claims: ['a'] }), item('2', { claims: ['a'] }), item('3', { claims: ['b', 'a'] })],
        0,
      );
      expect(results.map((r) => (r.verdict === 'claimed' ? r.claim : r.verdict))).toEqual(['accepted', 0, 1]);
      // `b` of the refused third item was not taken.
      expect(verdicts(await store.admit([item('4', { claims: ['b'] })], 10))).toEqual(['accepted']);
      const [batch] = await store.claimDue(Number.MAX_SAFE_INTEGER, 1000, 10);
      expect(batch?.parts.map((p) => p.event.text)).toEqual(['1', '4']);
    });

    it('refuses the second copy of one id in the same delivery and admits it again after its TTL', async () => {
      const store = await h.fresh();
      expect(verdicts(await store.admit([item('1', { claims: ['x'] }), item('1', { claims: ['x'] })], 0))).toEqual([
        'accepted',
        'claimed',
      ]);
      expect(verdicts(await store.admit([item('1', { claims: ['x'] })], 59_999))).toEqual(['claimed']);
      expect(verdicts(await store.admit([item('1', { claims: ['x'] })], 60_000))).toEqual(['accepted']);
      if (!h.shared) expect(store.claimStats().keys).toBeGreaterThan(0); // a shared store's counts are a cached view
    });

    it('assigns growing part ids and returns the deadline', async () => {
      const store = await h.fresh();
      const results = await store.admit([item('1', { at: 0 }), item('2', { at: 0, debounceKey: 'other' })], 0);
      const [a, b] = results.map(accepted);
      expect(Number(b?.partId)).toBeGreaterThan(Number(a?.partId));
      expect(a?.deadline).toBe(1000);
    });
  });
}
