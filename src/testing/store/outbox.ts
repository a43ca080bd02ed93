import { describe, expect, it } from 'vitest';
import type { PushLease, Store } from '../../core/ports/index.js';
import { draft, item } from './fixtures.js';
import { commitAll, type StoreHarness } from './harness.js';

/** The outbox: growing seqs, the tail, bodies kept exactly, and what a trim keeps. */
export function describeOutbox(h: StoreHarness): void {
  describe('outbox', () => {
    it('gives commits growing seqs and tells tail listeners in seq order', async () => {
      const store = await h.fresh();
      const seen: number[] = [];
      const stop = store.tail((record) => seen.push(record.seq));
      await store.admit(
        ['a', 'b', 'c'].map((s) => item(s, { sessionKey: s })),
        0,
      );
      const batches = await store.claimDue(1000, 100, 10);
      const records = await Promise.all(batches.map((batch, i) => store.commit(batch, draft(`o${i}`), 1000)));
      const seqs = records.map((r) => r?.seq as number);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      expect(new Set(seqs).size).toBe(3);
      expect(seen).toEqual(seqs);
      expect(await store.lastSeq()).toBe(seqs[2]);
      expect((await store.outboxAfter(seqs[0] as number, 10)).map((r) => r.id)).toEqual(['o1', 'o2']);
      expect((await store.outboxGet('o1'))?.messageIds).toEqual(['o1']);
      stop();
      await store.admit([item('d')], 2000);
      await store.commit(
        (await store.claimDue(9000, 100, 10))[0] as NonNullable<Awaited<ReturnType<Store['claimDue']>>[number]>,
        draft('o3'),
        9000,
      );
      expect(seen).toHaveLength(3);
    });

    it('names the life of its seqs, the same on every call, another in another store', async () => {
      const store = await h.fresh();
      const life = await store.life?.();
      if (life === undefined) return; // a store that never assigns a seq twice: its stream ids are plain seqs
      expect(life.tag).toMatch(/^[\w-]{1,64}$/);
      expect(life.since).toBe(0);
      await commitAll(store, [draft('o1')], 10);
      expect(await store.life?.()).toEqual(life);
      expect((await (await h.fresh()).life?.())?.tag).not.toBe(life.tag);
    });

    it('trims old records but never pending, dead, or ones a stream has not read', async () => {
      const store = await h.fresh();
      const ids = await commitAll(store, [
        draft('pending', 'pending', 'p'),
        draft('dead', 'pending', 'd'),
        draft('done1'),
        draft('done2'),
        draft('unread'),
      ]);
      const [lease] = (await store.claimPush(0, 100, 10)).filter((l) => l.record.id === 'dead');
      await store.ackPush(lease as PushLease, { state: 'dead', attempts: 5, lastError: 'HTTP 500' }, 1);
      const unread = ids.get('unread') as number;
      expect(await store.trimOutbox(Number.MAX_SAFE_INTEGER, 0, unread - 1)).toBe(2);
      expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['pending', 'dead', 'unread']);
      // What a trim keeps, it keeps whole, through a second trim too.
      await store.trimOutbox(Number.MAX_SAFE_INTEGER, 0, unread - 1);
      expect((await store.outboxAfter(0, 10)).map((r) => JSON.parse(r.body).id)).toEqual(['pending', 'dead', 'unread']);
      expect((await store.claimPush(1_000, 100, 10)).map((l) => JSON.parse(l.record.body).id)).toEqual(['pending']);
    });

    it('gives every body back exactly as committed, on every read', async () => {
      const store = await h.fresh();
      const body = (id: string) =>
        JSON.stringify({ type: 'chat.processedMessage', id, content: '订单 ORD-1 的状态? café 👋 \u0000' });
      const drafts = [
        { ...draft('u1', 'pending'), body: body('u1') },
        { ...draft('u2', 'pending', 'other'), body: body('u2') },
      ];
      const seqs = await commitAll(store, drafts);
      expect((await store.outboxAfter(0, 10)).map((r) => r.body)).toEqual([body('u1'), body('u2')]);
      expect((await store.outboxGet('u1'))?.body).toBe(body('u1'));
      const leases = await store.claimPush(0, 100, 10);
      expect(leases.map((l) => l.record.body).sort()).toEqual([body('u1'), body('u2')]);
      const dead = leases.find((l) => l.record.id === 'u2') as PushLease;
      await store.ackPush(dead, { state: 'dead', attempts: 3, lastError: 'HTTP 500' }, 1);
      expect((await store.deadLetters(10)).map((r) => [r.id, r.seq, r.body])).toEqual([
        ['u2', seqs.get('u2'), body('u2')],
      ]);
    });

    it('trims at the exact count and the exact cutoff, and nothing short of them', async () => {
      const store = await h.fresh();
      await commitAll(
        store,
        Array.from({ length: 5 }, (_, i) => draft(`b${i + 1}`, 'none', 's', (i + 1) * 1000)),
      );
      expect(await store.trimOutbox(1000, 5, Number.MAX_SAFE_INTEGER)).toBe(0); // 5 records, none older than 1000
      expect(await store.trimOutbox(1001, 5, Number.MAX_SAFE_INTEGER)).toBe(1); // b1 (1000) is older
      expect(await store.trimOutbox(0, 4, Number.MAX_SAFE_INTEGER)).toBe(0); // 4 left, 4 kept
      expect(await store.trimOutbox(0, 3, Number.MAX_SAFE_INTEGER)).toBe(1);
      expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['b3', 'b4', 'b5']);
    });

    it('keeps the newest keepCount records for replay, and undelivered and dead records besides them', async () => {
      const store = await h.fresh();
      await commitAll(store, [
        draft('p1', 'pending', 'p'),
        draft('d1', 'pending', 'd'),
        ...['n1', 'n2', 'n3', 'n4'].map((id) => draft(id)),
      ]);
      const [lease] = (await store.claimPush(0, 100, 10)).filter((l) => l.record.id === 'd1');
      await store.ackPush(lease as PushLease, { state: 'dead', attempts: 5, lastError: 'HTTP 500' }, 1);
      // The undelivered and dead records do not count against the newest three: n2-n4 stay replayable.
      expect(await store.trimOutbox(0, 3, Number.MAX_SAFE_INTEGER)).toBe(1);
      expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['p1', 'd1', 'n2', 'n3', 'n4']);
      expect(await store.trimOutbox(0, 3, Number.MAX_SAFE_INTEGER)).toBe(0);
    });

    it('keeps the newest keepCount records and those younger than the cutoff', async () => {
      const store = await h.fresh();
      await commitAll(
        store,
        Array.from({ length: 10 }, (_, i) => draft(`o${i + 1}`, 'none', 's', (i + 1) * 1000)),
      );
      await store.trimOutbox(0, 4, Number.MAX_SAFE_INTEGER);
      expect((await store.outboxAfter(0, 20)).map((r) => r.id)).toEqual(['o7', 'o8', 'o9', 'o10']);
      await store.trimOutbox(9000, 100, Number.MAX_SAFE_INTEGER);
      expect((await store.outboxAfter(0, 20)).map((r) => r.id)).toEqual(['o9', 'o10']);
    });
  });
}
