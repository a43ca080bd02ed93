import { describe, expect, it } from 'vitest';
import type { ClaimLease, PushLease } from '../../core/ports/index.js';
import { draft } from './fixtures.js';
import { commitAll, type StoreHarness } from './harness.js';

const ids = (leases: readonly PushLease[]): string[] => leases.map((lease) => lease.record.id).sort();

/**
 * Claims (contract §15): the push queue's records taken by agent workers, each claim an attempt,
 * in order per session, a lease that runs out offered again, extended only while held.
 */
export function describeClaims(h: StoreHarness): void {
  describe('claims', () => {
    it('counts each claim as an attempt and hands out the count; a retry is offered again at its time', async () => {
      const store = await h.fresh();
      await commitAll(store, [draft('r1', 'pending')]);
      const [first] = await store.claimOutputs(0, 100, 10);
      expect(first).toMatchObject({ record: { id: 'r1', attempts: 1 }, leaseUntil: 100, expired: false });
      expect((await store.outboxGet('r1'))?.attempts).toBe(1);
      const nack = { state: 'retry', attempts: 1, at: 50, lastError: 'nacked 1 times' } as const;
      expect(await store.ackPush(first as ClaimLease, nack, 10)).toBe(true);
      expect(await store.claimOutputs(49, 100, 10)).toEqual([]);
      const [second] = await store.claimOutputs(50, 100, 10);
      expect(second).toMatchObject({ record: { id: 'r1', attempts: 2, lastError: 'nacked 1 times' }, expired: false });
      expect(second?.token).not.toBe(first?.token);
      expect(await store.ackPush(second as ClaimLease, { state: 'delivered', attempts: 2 }, 60)).toBe(true);
      expect(await store.outboxGet('r1')).toMatchObject({ state: 'delivered', attempts: 2 });
      expect(await store.deliveryCounts()).toEqual({ pending: 0, dead: 0 });
    });

    it("offers a session's next record only once the one before is acked or dead, and other sessions meanwhile", async () => {
      const store = await h.fresh();
      await commitAll(store, [
        draft('a1', 'pending', 'a'),
        draft('a2', 'pending', 'a'),
        draft('a3', 'pending', 'a'),
        draft('b1', 'pending', 'b'),
        draft('c1', 'pending', 'c'),
      ]);
      const [one, two] = await Promise.all([store.claimOutputs(0, 100, 2), store.claimOutputs(0, 100, 2)]);
      const taken = [...(one ?? []), ...(two ?? [])];
      expect(ids(taken)).toEqual(['a1', 'b1', 'c1']);
      expect(await store.claimOutputs(10, 100, 10)).toEqual([]);
      const a1 = taken.find((lease) => lease.record.id === 'a1') as ClaimLease;
      await store.ackPush(a1, { state: 'delivered', attempts: 1 }, 10);
      const [a2] = await store.claimOutputs(10, 100, 10);
      expect(a2?.record).toMatchObject({ id: 'a2', attempts: 1 });
      await store.ackPush(a2 as ClaimLease, { state: 'dead', attempts: 1, lastError: 'nacked 1 times' }, 20);
      expect(ids(await store.claimOutputs(20, 100, 10))).toEqual(['a3']);
    });

    it('offers a record whose lease ran out again, the next attempt, saying so; the old token changes nothing', async () => {
      const store = await h.fresh();
      await commitAll(store, [draft('r1', 'pending'), draft('r2', 'pending')]);
      const [old] = await store.claimOutputs(0, 100, 10);
      expect(await store.claimOutputs(99, 100, 10)).toEqual([]);
      const [taken] = await store.claimOutputs(100, 100, 10);
      expect(taken).toMatchObject({ record: { id: 'r1', attempts: 2 }, leaseUntil: 200, expired: true });
      expect(taken?.token).not.toBe(old?.token);

      expect(await store.ackPush(old as ClaimLease, { state: 'delivered', attempts: 1 }, 110)).toBe(false);
      expect(await store.extendClaim(old as ClaimLease, 1000, 110)).toBe(false);
      expect(await store.claimOf('r1')).toMatchObject({
        record: { state: 'pending', attempts: 2 },
        lease: { token: taken?.token, leaseUntil: 200 },
      });
      expect(await store.claimOutputs(150, 100, 10)).toEqual([]);
      expect(await store.ackPush(taken as ClaimLease, { state: 'delivered', attempts: 2 }, 150)).toBe(true);
      expect(await store.claimOutputs(150, 100, 10)).toMatchObject([
        { record: { id: 'r2', attempts: 1 }, expired: false },
      ]);
    });

    it('moves the end of a held lease later, and the record is not offered again before the new end', async () => {
      const store = await h.fresh();
      await commitAll(store, [draft('r1', 'pending')]);
      const [lease] = (await store.claimOutputs(0, 100, 10)) as [ClaimLease];
      expect(await store.extendClaim(lease, 300, 50)).toBe(true);
      // never earlier than it is
      expect(await store.extendClaim(lease, 200, 60)).toBe(true);
      expect((await store.claimOf('r1'))?.lease).toEqual({ token: lease.token, leaseUntil: 300 });
      expect(await store.claimOutputs(150, 100, 10)).toEqual([]);
      expect(await store.claimOutputs(299, 100, 10)).toEqual([]);
      expect(await store.claimOutputs(300, 100, 10)).toMatchObject([
        { record: { id: 'r1', attempts: 2 }, expired: true },
      ]);
    });

    it('refuses to extend a lease that ran out, changing nothing', async () => {
      const store = await h.fresh();
      await commitAll(store, [draft('r1', 'pending')]);
      const [lease] = (await store.claimOutputs(0, 100, 10)) as [ClaimLease];
      expect(await store.extendClaim(lease, 500, 101)).toBe(false);
      expect((await store.claimOf('r1'))?.lease).toEqual({ token: lease.token, leaseUntil: 100 });
      expect(await store.claimOutputs(101, 100, 10)).toMatchObject([{ record: { attempts: 2 }, expired: true }]);
    });

    it('shows a record and the lease on its head: held, run out, and none once acked', async () => {
      const store = await h.fresh();
      expect(await store.claimOf('nothing')).toBeUndefined();
      await commitAll(store, [draft('r1', 'pending'), draft('r2', 'pending')]);
      const unclaimed = await store.claimOf('r1');
      expect(unclaimed?.record).toMatchObject({ id: 'r1', state: 'pending', attempts: 0 });
      expect(unclaimed?.lease).toBeUndefined();
      const [lease] = (await store.claimOutputs(0, 100, 10)) as [ClaimLease];
      expect(await store.claimOf('r1')).toMatchObject({
        record: { id: 'r1', attempts: 1 },
        lease: { token: lease.token, leaseUntil: 100 },
      });
      // the session's next record waits behind the head: no lease of its own
      expect((await store.claimOf('r2'))?.lease).toBeUndefined();
      await store.ackPush(lease, { state: 'delivered', attempts: 1 }, 500);
      const acked = await store.claimOf('r1');
      expect(acked?.record).toMatchObject({ state: 'delivered', attempts: 1 });
      expect(acked?.lease).toBeUndefined();
    });

    it('offers a dead letter again once requeued, its attempts counted from one', async () => {
      const store = await h.fresh();
      await commitAll(store, [draft('r1', 'pending')]);
      const [lease] = (await store.claimOutputs(0, 100, 10)) as [ClaimLease];
      await store.ackPush(lease, { state: 'dead', attempts: 1, lastError: 'lease ran out 1 times' }, 10);
      expect(await store.claimOutputs(20, 100, 10)).toEqual([]);
      expect(await store.deliveryCounts()).toEqual({ pending: 0, dead: 1 });
      expect(await store.requeueDead('r1', 1, 30)).toBe(1);
      expect(await store.claimOutputs(30, 100, 10)).toMatchObject([
        { record: { id: 'r1', state: 'pending', attempts: 1 }, expired: false },
      ]);
    });
  });
}

/** What a durable store keeps of claims across a restart. */
export function describeClaimRestart(h: StoreHarness): void {
  describe('claims across a restart', () => {
    it('keeps the attempts counted and offers the record again once its lease is over', async () => {
      const store = await h.fresh();
      await commitAll(store, [draft('r1', 'pending'), draft('r2', 'pending')]);
      await store.claimOutputs(0, 100, 10);
      const again = await h.restart(store);
      expect((await again.outboxGet('r1'))?.attempts).toBe(1);
      const [taken] = await again.claimOutputs(100, 100, 10);
      expect(taken?.record).toMatchObject({ id: 'r1', attempts: 2 });
      expect(await again.ackPush(taken as ClaimLease, { state: 'delivered', attempts: 2 }, 110)).toBe(true);
      expect(ids(await again.claimOutputs(110, 100, 10))).toEqual(['r2']);
    });
  });
}
