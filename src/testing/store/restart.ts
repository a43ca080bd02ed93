import { describe, expect, it } from 'vitest';
import { accepted, delivery, draft, item, step, verdicts } from './fixtures.js';
import { commitAll, type StoreHarness } from './harness.js';

/** What a durable store keeps across a restart. */
export function describeRestart(h: StoreHarness): void {
  describe('restart', () => {
    it('keeps buffers, claims, correlation groups and the push queue', async () => {
      const store = await h.fresh();
      await store.admit([item('1', { claims: ['x'], at: 0, correlation: step('k', delivery('A', 'p1')) })], 0);
      await commitAll(store, [draft('r1', 'pending', 'q'), draft('r2', 'pending', 'q')], 10);
      const again = await h.restart(store);
      expect(verdicts(await again.admit([item('1', { claims: ['x'] })], 20))).toEqual(['claimed']);
      expect(await again.admit([item('1b', { correlation: step('k', delivery('B', 'q1')) })], 20)).toMatchObject([
        { verdict: 'correlated', retry: false },
      ]);
      expect(await again.openBuffers()).toBe(1);
      expect(await again.nextDeadline()).toBe(1000);
      expect((await again.claimDue(1000, 100, 10))[0]?.parts.map((p) => p.event.text)).toEqual(['1']);
      expect(await again.deliveryCounts()).toEqual({ pending: 2, dead: 0 });
      expect((await again.claimPush(20, 100, 10)).map((l) => l.record.id)).toEqual(['r1']);
    });

    it('never repeats a part id, seq or fence after a restart', async () => {
      const store = await h.fresh();
      const [a] = (await store.admit([item('1')], 0)).map(accepted);
      const [batch] = await store.claimDue(1000, 100, 10);
      const record = await store.commit(batch as NonNullable<typeof batch>, draft('o1'), 1000);
      const again = await h.restart(store);
      const [b] = (await again.admit([item('2')], 2000)).map(accepted);
      expect(Number(b?.partId)).toBeGreaterThan(Number(a?.partId));
      const [next] = await again.claimDue(3000, 100, 10);
      expect(next?.fence).toBeGreaterThan(batch?.fence as number);
      expect((await again.commit(next as NonNullable<typeof next>, draft('o2'), 3000))?.seq).toBeGreaterThan(
        record?.seq as number,
      );
      expect(await again.lastSeq()).toBe(2);
    });

    it('keeps the life of its seqs across a restart (they go on from where they were)', async () => {
      const store = await h.fresh();
      const life = await store.life?.();
      await commitAll(store, [draft('o1')], 10);
      const again = await h.restart(store);
      expect(await again.life?.()).toEqual(life);
    });

    it("keeps shared values (a poller's cursor, a platform token) until their time is up", async () => {
      const store = await h.fresh();
      await store.sharedPut('cursor:tg', '1001', 60_000, 0);
      await store.sharedPut('token:wx', 'short', 10, 0);
      const again = await h.restart(store);
      expect(await again.sharedGet('cursor:tg', 20)).toBe('1001');
      // a shared store keeps them as keys with a TTL on its own clock (SharedValues): not by `now`
      if (!h.shared) expect(await again.sharedGet('token:wx', 20)).toBeUndefined();
    });
  });
}
