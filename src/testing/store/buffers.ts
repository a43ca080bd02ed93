import { describe, expect, it } from 'vitest';
import type { LeasedBatch } from '../../core/ports/index.js';
import { draft, item, rule } from './fixtures.js';
import { type StoreHarness } from './harness.js';

/** Buffers with owners: leases, fencing, takeover, release, one buffer per session in flight, shutdown. */
export function describeBuffers(h: StoreHarness): void {
  describe('buffers with owners', () => {
    it.skipIf(h.sharded)('takes due buffers oldest deadline first, up to the limit', async () => {
      const store = await h.fresh();
      await store.admit([item('late', { sessionKey: 's1', at: 500 })], 500);
      await store.admit([item('early', { sessionKey: 's2', at: 0 })], 0);
      await store.admit([item('later', { sessionKey: 's3', at: 900 })], 900);
      expect(await store.openBuffers()).toBe(3);
      const batches = await store.claimDue(2000, 100, 2);
      expect(batches.map((b) => b.parts[0]?.event.text)).toEqual(['early', 'late']);
      expect((await store.claimDue(2000, 100, 2)).map((b) => b.sessionKey)).toEqual(['s3']);
    });

    it('keeps one buffer per session in flight, in order', async () => {
      const store = await h.fresh();
      await store.admit(
        [item('alice', { debounceKey: 's/alice', at: 0 }), item('bob', { debounceKey: 's/bob', at: 100 })],
        100,
      );
      const [first, ...rest] = await store.claimDue(5000, 1000, 10);
      expect(rest).toEqual([]);
      expect(first?.debounceKey).toBe('s/alice');
      expect(await store.claimDue(5000, 1000, 10)).toEqual([]);
      await store.commit(first as NonNullable<typeof first>, draft('o1'), 5000);
      expect((await store.claimDue(5000, 1000, 10)).map((b) => b.debounceKey)).toEqual(['s/bob']);
    });

    it("lets a second owner take over an expired lease and refuses the first owner's commit", async () => {
      const store = await h.fresh();
      await store.admit([item('1', { at: 0 })], 0);
      const [mine] = await store.claimDue(1000, 100, 10);
      expect(await store.claimDue(1099, 100, 10)).toEqual([]);
      expect(await store.nextDeadline()).toBe(1100);
      const [theirs] = await store.claimDue(1100, 100, 10);
      expect(theirs?.reason).toBe('takeover');
      expect(theirs?.fence).toBeGreaterThan(mine?.fence as number);
      expect(await store.renewLease(mine as NonNullable<typeof mine>, 1150, 100)).toBe(false);
      expect(await store.commit(mine as NonNullable<typeof mine>, draft('o-mine'), 1150)).toBeUndefined();
      expect((await store.commit(theirs as NonNullable<typeof theirs>, draft('o-theirs'), 1160))?.id).toBe('o-theirs');
      expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['o-theirs']);
      expect(await store.openBuffers()).toBe(0);
    });

    it('renews a lease so the buffer is not taken over', async () => {
      const store = await h.fresh();
      await store.admit([item('1', { at: 0 })], 0);
      const [batch] = await store.claimDue(1000, 100, 10);
      expect(await store.renewLease(batch as NonNullable<typeof batch>, 1090, 100)).toBe(true);
      expect(await store.claimDue(1150, 100, 10)).toEqual([]);
      expect(await store.nextDeadline()).toBe(1190);
    });

    it('lets a buffer be taken over when its lease runs out, also after a renewal that shortened it', async () => {
      const store = await h.fresh();
      await store.admit([item('1', { at: 0 })], 0);
      const [batch] = await store.claimDue(1000, 1000, 10);
      expect(await store.renewLease(batch as NonNullable<typeof batch>, 1100, 100)).toBe(true);
      expect(await store.nextDeadline()).toBe(1200);
      expect((await store.claimDue(1500, 1000, 10)).map((t) => t.reason)).toEqual(['takeover']);
    });

    it('keeps parts that arrive during a lease for the next batch', async () => {
      const store = await h.fresh();
      await store.admit([item('1', { at: 0 })], 0);
      const [batch] = await store.claimDue(1000, 500, 10);
      await store.admit([item('2', { at: 1200 })], 1200);
      expect(await store.nextDeadline()).toBe(1500);
      await store.commit(batch as NonNullable<typeof batch>, draft('o1'), 1300);
      expect(await store.openBuffers()).toBe(1);
      expect(await store.nextDeadline()).toBe(2200);
      const [next] = await store.claimDue(2200, 500, 10);
      expect(next?.parts.map((p) => p.event.text)).toEqual(['2']);
    });

    it('closes a buffer at maxMessages and keeps a later part for the next batch', async () => {
      const store = await h.fresh();
      const three = { ...rule, maxMessages: 3 };
      await store.admit(
        ['1', '2', '3', '4'].map((t) => item(t, { at: 0, rule: three })),
        0,
      );
      const [batch] = await store.claimDue(0, 100, 10);
      expect(batch?.reason).toBe('count');
      expect(batch?.parts.map((p) => p.event.text)).toEqual(['1', '2', '3']);
      await store.commit(batch as NonNullable<typeof batch>, draft('o1'), 1);
      expect(await store.nextDeadline()).toBe(1000);
      const [next] = await store.claimDue(1000, 100, 10);
      expect(next?.parts.map((p) => p.event.text)).toEqual(['4']);
    });

    it('closes a buffer at a command, with the command last', async () => {
      const store = await h.fresh();
      await store.admit(
        [item('hi', { at: 0 }), item('/reset', { at: 0, closeNow: true }), item('after', { at: 0 })],
        0,
      );
      const [batch] = await store.claimDue(0, 100, 10);
      expect(batch?.reason).toBe('command');
      expect(batch?.parts.map((p) => p.event.text)).toEqual(['hi', '/reset']);
    });

    it("keeps a failed batch ahead of its session's later batches until it commits", async () => {
      const store = await h.fresh();
      await store.admit(
        [
          item('first', { at: 0, debounceKey: 's/alice', closeNow: true }),
          item('/second', { at: 0, debounceKey: 's/bob', closeNow: true }),
        ],
        0,
      );
      const [batch] = await store.claimDue(0, 100, 10);
      expect(batch?.parts.map((p) => p.event.text)).toEqual(['first']);
      await store.release(batch as NonNullable<typeof batch>, 500);
      expect(await store.claimDue(10, 100, 10)).toEqual([]);
      const [again] = await store.claimDue(500, 100, 10);
      expect(again?.parts.map((p) => p.event.text)).toEqual(['first']);
      await store.commit(again as NonNullable<typeof again>, draft('o1'), 501);
      const [later] = await store.claimDue(502, 100, 10);
      expect(later?.parts.map((p) => p.event.text)).toEqual(['/second']);
    });

    it('re-arms a released buffer at the retry time and ignores a stale release', async () => {
      const store = await h.fresh();
      await store.admit([item('1', { at: 0 })], 0);
      const [batch] = await store.claimDue(1000, 100, 10);
      await store.release(batch as NonNullable<typeof batch>, 5000);
      await store.release(batch as NonNullable<typeof batch>, 9000);
      expect(await store.nextDeadline()).toBe(5000);
      expect(await store.claimDue(4999, 100, 10)).toEqual([]);
      const [again] = await store.claimDue(5000, 100, 10);
      expect(again?.parts.map((p) => p.event.text)).toEqual(['1']);
      expect(await store.commit(batch as NonNullable<typeof batch>, draft('stale'), 5000)).toBeUndefined();
    });

    // `claimDue(Infinity)` is the shutdown of a store no one else shares (BufferLeases): a shared
    // store leaves what is not due to the instances that stay.
    it.skipIf(h.shared)('takes every buffer not leased at shutdown', async () => {
      const store = await h.fresh();
      await store.admit(
        [item('a', { debounceKey: 's/a' }), item('b', { debounceKey: 's/b' }), item('c', { sessionKey: 't' })],
        0,
      );
      const batches = await store.claimDue(Infinity, 1000, 10);
      expect(batches.map((b) => b.reason)).toEqual(['shutdown', 'shutdown', 'shutdown']);
    });

    it.skipIf(h.shared)(
      'retries one buffer of a session at a time when a shutdown gave back several after a failure',
      async () => {
        const store = await h.fresh();
        await store.admit([item('a1', { at: 0, debounceKey: 's/a' }), item('b1', { at: 10, debounceKey: 's/b' })], 10);
        const texts = (batches: LeasedBatch[]) => batches.map((b) => b.parts.map((p) => p.event.text));
        const [a, b] = await store.claimDue(Infinity, 1000, 10);
        // a's flush failed; b, behind it, is given back too (one attempt at shutdown).
        await store.release(a as LeasedBatch, 5000);
        await store.release(b as LeasedBatch, 5000);
        const retried = await store.claimDue(5000, 1000, 10);
        expect(texts(retried)).toEqual([['a1']]);
        await store.commit(retried[0] as LeasedBatch, draft('a'), 5001);
        expect(texts(await store.claimDue(5002, 1000, 10))).toEqual([['b1']]);
      },
    );

    it.skipIf(h.shared)(
      "keeps a batch given back behind its session's retrying one in its place, ahead of a later batch the claim left out",
      async () => {
        const store = await h.fresh();
        await store.admit([item('a1', { at: 0, debounceKey: 's/a' })], 0);
        await store.admit([item('b1', { at: 1, debounceKey: 's/b' })], 1);
        await store.admit([item('c1', { at: 2, debounceKey: 's/c' })], 2);
        const texts = (batches: LeasedBatch[]) => batches.map((b) => b.parts.map((p) => p.event.text));
        // A shutdown round with room for two: a and b; c waits for the next call.
        const [a, b] = await store.claimDue(Infinity, 1000, 2);
        expect(texts([a, b] as LeasedBatch[])).toEqual([['a1'], ['b1']]);
        await store.release(a as LeasedBatch, 5000); // a's flush failed
        await store.release(b as LeasedBatch, 5000); // b, behind it, given back too
        const retried = await store.claimDue(Infinity, 1000, 10);
        expect(texts(retried)).toEqual([['a1']]);
        await store.commit(retried[0] as LeasedBatch, draft('a'), 5001);
        expect(texts(await store.claimDue(Infinity, 1000, 10))).toEqual([['b1'], ['c1']]);
      },
    );

    it.skipIf(h.shared)(
      "takes a failed flush's buffer first and alone at shutdown: its session's other buffers come in the next round",
      async () => {
        const store = await h.fresh();
        await store.admit([item('a1', { at: 0, debounceKey: 's/a' }), item('t1', { at: 0, sessionKey: 't' })], 0);
        const [a] = (await store.claimDue(1000, 1000, 10)).filter((t) => t.sessionKey === 's');
        await store.release(a as NonNullable<typeof a>, 1600); // its flush failed: again at 1600
        await store.admit(
          [item('b1', { at: 500, debounceKey: 's/b' }), item('b2', { at: 700, debounceKey: 's/c' })],
          500,
        );
        const texts = (batches: LeasedBatch[]) => batches.map((b) => b.parts.map((p) => p.event.text));
        const first = await store.claimDue(Infinity, 1000, 10);
        expect(texts(first.filter((t) => t.sessionKey === 's'))).toEqual([['a1']]);
        await store.commit(first.find((t) => t.sessionKey === 's') as LeasedBatch, draft('a'), 1700);
        expect(texts(await store.claimDue(Infinity, 1000, 10))).toEqual([['b1'], ['b2']]);
      },
    );

    it.skipIf(h.shared)(
      'takes nothing more of a session at shutdown behind a batch cut by a command: the parts past the cut come next, in due order',
      async () => {
        const store = await h.fresh();
        // Session s: alice sent a command and then more; bob wrote after her; t is another session.
        await store.admit(
          [
            item('/stop', { at: 0, debounceKey: 's/alice', closeNow: true }),
            item('after', { at: 10, debounceKey: 's/alice' }),
            item('bob', { at: 20, debounceKey: 's/bob' }),
            item('t1', { at: 30, sessionKey: 't' }),
          ],
          30,
        );
        const texts = (batches: LeasedBatch[]) => batches.map((b) => b.parts.map((p) => p.event.text));
        const first = await store.claimDue(Infinity, 1000, 10);
        expect(texts(first)).toEqual([['/stop'], ['t1']]);
        for (const [i, batch] of first.entries()) await store.commit(batch, draft(`o${i}`), 40);
        const second = await store.claimDue(Infinity, 1000, 10);
        expect(texts(second)).toEqual([['after'], ['bob']]);
      },
    );
  });
}
