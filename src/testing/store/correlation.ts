import { describe, expect, it } from 'vitest';
import { accepted, delivery, item, step, verdicts } from './fixtures.js';
import { type StoreHarness } from './harness.js';

/** Correlation groups: another bot's copy, a retry, a real repeat, notices, expiry and the cap. */
export function describeCorrelation(h: StoreHarness): void {
  describe('correlation', () => {
    it("tells another bot's copy from a retry of the same bot, and a real repeat from both", async () => {
      const store = await h.fresh();
      const first = accepted((await store.admit([item('1', { correlation: step('k', delivery('A', 'p1')) })], 0))[0]);
      expect(first.correlation?.deliveries.map((d) => d.botId)).toEqual(['A']);

      const other = (await store.admit([item('1b', { correlation: step('k', delivery('B', 'q1')) })], 10))[0];
      expect(other).toMatchObject({ verdict: 'correlated', retry: false });
      expect(other?.verdict === 'correlated' && other.correlation.deliveries.map((d) => d.botId)).toEqual(['A', 'B']);

      const retry = (await store.admit([item('1', { correlation: step('k', delivery('A', 'p1')) })], 20))[0];
      expect(retry).toMatchObject({ verdict: 'correlated', retry: true });
      expect((await store.correlation('k', 20))?.deliveries).toHaveLength(2);

      // Same bot, another message id: the user sent it again; a new group replaces the old.
      const again = accepted((await store.admit([item('2', { correlation: step('k', delivery('A', 'p2')) })], 30))[0]);
      expect(again.correlation?.deliveries.map((d) => d.platformId)).toEqual(['p2']);
      expect((await store.correlation('k', 30))?.firstAt).toBe(30);
      if (!h.shared) expect(store.correlationStats().groups).toBe(1); // a shared store's counts are a cached view
    });

    it('takes notices stamped within the tolerance as one event and farther apart as a new one', async () => {
      const store = await h.fresh();
      const notice = (bot: string, time: number) =>
        item(`n${bot}${time}`, { correlation: step('n', delivery(bot, undefined), { kind: 'notice', time }) });
      expect(verdicts(await store.admit([notice('A', 100)], 0))).toEqual(['accepted']);
      expect(await store.admit([notice('B', 102)], 1)).toMatchObject([{ verdict: 'correlated', retry: false }]);
      // A notice has no id: the same bot again is a retry.
      expect(await store.admit([notice('A', 101)], 2)).toMatchObject([{ verdict: 'correlated', retry: true }]);
      expect(verdicts(await store.admit([notice('B', 105)], 3))).toEqual(['accepted']);
      expect((await store.correlation('n', 3))?.time).toBe(105);
    });

    it('ends a group at its expiry', async () => {
      const store = await h.fresh();
      await store.admit([item('1', { correlation: step('k', delivery('A', 'p1'), { windowMs: 1000 }) })], 0);
      expect(await store.admit([item('1', { correlation: step('k', delivery('B', 'q1')) })], 999)).toMatchObject([
        { verdict: 'correlated' },
      ]);
      expect(await store.correlation('k', 1000)).toBeUndefined();
      expect(verdicts(await store.admit([item('1', { correlation: step('k', delivery('B', 'q1')) })], 1000))).toEqual([
        'accepted',
      ]);
    });

    it('writes no group for an item a claim refused', async () => {
      const store = await h.fresh();
      await store.admit([item('1', { claims: ['x'] })], 0);
      expect(
        verdicts(await store.admit([item('1', { claims: ['x'], correlation: step('k', delivery('A', 'p1')) })], 1)),
      ).toEqual(['claimed']);
      expect(await store.correlation('k', 1)).toBeUndefined();
    });

    it('evicts the oldest group past the cap and counts it', async () => {
      const store = await h.fresh();
      for (let i = 0; i < 4100; i += 100) {
        await store.admit(
          Array.from({ length: 100 }, (_, j) =>
            item(`${i + j}`, { correlation: step(`g${i + j}`, delivery('A', `${i + j}`)) }),
          ),
          i,
        );
      }
      if (!h.shared) expect(store.correlationStats()).toEqual({ groups: 4096, evicted: 4 });
      expect(await store.correlation('g0', 4000)).toBeUndefined();
      expect(await store.correlation('g4', 4000)).toBeDefined();
    });
  });
}
