import { describe, expect, it } from 'vitest';
import type { PushLease } from '../../core/ports/index.js';
import { draft } from './fixtures.js';
import { commitAll, type StoreHarness } from './harness.js';

/** The push queue: one record per session in flight, retries at the head, takeover, dead letters. */
export function describePushQueue(h: StoreHarness): void {
  describe('push queue', () => {
    it('never gives two pushers one session at once, keeps order, and holds the head on retry', async () => {
      const store = await h.fresh();
      await commitAll(store, [
        draft('r1', 'pending'),
        draft('r2', 'pending'),
        draft('r3', 'pending'),
        draft('x1', 'pending', 'other'),
      ]);
      const [a, b] = await Promise.all([store.claimPush(0, 100, 10), store.claimPush(0, 100, 10)]);
      const taken = [...(a ?? []), ...(b ?? [])].map((l) => l.record.id).sort();
      expect(taken).toEqual(['r1', 'x1']);
      const r1 = [...(a ?? []), ...(b ?? [])].find((l) => l.record.id === 'r1') as PushLease;
      expect(r1.record.body).toContain('"r1"');

      expect(await store.ackPush(r1, { state: 'retry', attempts: 1, at: 500, lastError: 'HTTP 503' }, 10)).toBe(true);
      expect(await store.ackPush(r1, { state: 'delivered', attempts: 1 }, 10)).toBe(false);
      // x1's lease expiry comes first; a shared store names the next record no pusher holds (its
      // pushers poll for takeovers: src/push/agent-push.ts, pollMs)
      expect(await store.nextPushAt()).toBe(h.shared ? 500 : 100);
      expect((await store.claimPush(499, 100, 10)).map((l) => l.record.id)).toEqual(['x1']);
      const [again] = await store.claimPush(500, 100, 10);
      expect(again?.record).toMatchObject({ id: 'r1', attempts: 1, lastError: 'HTTP 503' });
      expect(await store.ackPush(again as PushLease, { state: 'delivered', attempts: 2 }, 510)).toBe(true);
      // A delivered record names no error and no next attempt: the fields are gone, not undefined.
      const delivered = await store.outboxGet('r1');
      expect(delivered?.state).toBe('delivered');
      expect(Object.keys(delivered ?? {}).filter((key) => key === 'lastError' || key === 'nextAttemptAt')).toEqual([]);
      expect((await store.claimPush(510, 100, 10)).map((l) => l.record.id)).toEqual(['r2']);
      expect(await store.deliveryCounts()).toEqual({ pending: 3, dead: 0 });
    });

    it('takes over a push whose lease ran out and refuses the old token', async () => {
      const store = await h.fresh();
      await commitAll(store, [draft('r1', 'pending')]);
      const [old] = await store.claimPush(0, 100, 10);
      expect(await store.claimPush(99, 100, 10)).toEqual([]);
      const [taken] = await store.claimPush(100, 100, 10);
      expect(taken?.token).not.toBe(old?.token);
      expect(await store.ackPush(old as PushLease, { state: 'delivered', attempts: 1 }, 120)).toBe(false);
      expect(await store.ackPush(taken as PushLease, { state: 'delivered', attempts: 1 }, 120)).toBe(true);
      expect(await store.deliveryCounts()).toEqual({ pending: 0, dead: 0 });
      expect(await store.nextPushAt()).toBeUndefined();
    });

    it('moves each dead letter back once under concurrent requeues, ahead of later records', async () => {
      const store = await h.fresh();
      await commitAll(
        store,
        ['d1', 'd2', 'd3'].map((id) => draft(id, 'pending', id)),
      );
      for (const lease of await store.claimPush(0, 100, 10)) {
        await store.ackPush(lease, { state: 'dead', attempts: 3, lastError: 'gone' }, 1);
      }
      expect(await store.deliveryCounts()).toEqual({ pending: 0, dead: 3 });
      expect((await store.deadLetters(10)).map((r) => r.id)).toEqual(['d1', 'd2', 'd3']);
      await commitAll(store, [draft('later', 'pending', 'd1')]);

      const moved = await Promise.all(Array.from({ length: 5 }, () => store.requeueDead(undefined, 10, 2)));
      expect(moved.reduce((sum, n) => sum + n, 0)).toBe(3);
      expect(await store.deliveryCounts()).toEqual({ pending: 4, dead: 0 });
      expect(await store.requeueDead('d1', 10, 3)).toBe(0);
      const order = (await store.claimPush(2, 100, 10)).map((l) => l.record);
      expect(order.map((r) => r.id).sort()).toEqual(['d1', 'd2', 'd3']);
      expect(order.find((r) => r.id === 'd1')).toMatchObject({ state: 'pending', attempts: 0, lastError: 'gone' });
    });

    it('puts a requeued record after a head a pusher holds', async () => {
      const store = await h.fresh();
      await commitAll(store, [draft('old', 'pending'), draft('head', 'pending')]);
      const [old] = await store.claimPush(0, 100, 10);
      await store.ackPush(old as PushLease, { state: 'dead', attempts: 1, lastError: 'bad' }, 1);
      const [head] = await store.claimPush(1, 100, 10);
      expect(head?.record.id).toBe('head');
      expect(await store.requeueDead('old', 10, 2)).toBe(1);
      expect(await store.claimPush(2, 100, 10)).toEqual([]);
      await store.ackPush(head as PushLease, { state: 'delivered', attempts: 1 }, 3);
      expect((await store.claimPush(3, 100, 10)).map((l) => l.record.id)).toEqual(['old']);
    });
  });
}
