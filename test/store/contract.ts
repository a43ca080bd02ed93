import { afterEach, describe, expect, it } from 'vitest';
import type { LeasedBatch, OutboxRecord, PushLease, Store } from '../../src/ports.js';
import { accepted, delivery, draft, item, rule, step, verdicts } from './fixtures.js';

/**
 * The meaning every Store keeps, whatever holds its state. `open` gives a fresh, empty store;
 * `reopen` (durable stores) closes one and opens the same state again, as a restart would.
 */
export function describeStoreContract(name: string, open: () => Promise<Store>, reopen?: (store: Store) => Promise<Store>): void {
  describe(`${name} store contract`, () => {
    let stores: Store[] = [];
    const fresh = async (): Promise<Store> => {
      const store = await open();
      stores.push(store);
      return store;
    };
    const restart = async (store: Store): Promise<Store> => {
      const again = await (reopen as NonNullable<typeof reopen>)(store);
      stores.push(again);
      return again;
    };
    afterEach(async () => {
      for (const store of stores) await store.close().catch(() => undefined);
      stores = [];
    });

    describe('admit', () => {
      it('claims in order and records nothing of an item refused by a claim', async () => {
        const store = await fresh();
        const results = await store.admit([
          item('1', { claims: ['a'] }),
          item('2', { claims: ['a'] }),
          item('3', { claims: ['b', 'a'] }),
        ], 0);
        expect(results.map((r) => (r.verdict === 'claimed' ? r.claim : r.verdict))).toEqual(['accepted', 0, 1]);
        // `b` of the refused third item was not taken.
        expect(verdicts(await store.admit([item('4', { claims: ['b'] })], 10))).toEqual(['accepted']);
        const [batch] = await store.claimDue(Number.MAX_SAFE_INTEGER, 1000, 10);
        expect(batch?.parts.map((p) => p.event.text)).toEqual(['1', '4']);
      });

      it('refuses the second copy of one id in the same delivery and admits it again after its TTL', async () => {
        const store = await fresh();
        expect(verdicts(await store.admit([item('1', { claims: ['x'] }), item('1', { claims: ['x'] })], 0))).toEqual(['accepted', 'claimed']);
        expect(verdicts(await store.admit([item('1', { claims: ['x'] })], 59_999))).toEqual(['claimed']);
        expect(verdicts(await store.admit([item('1', { claims: ['x'] })], 60_000))).toEqual(['accepted']);
        expect(store.claimStats().keys).toBeGreaterThan(0);
      });

      it('assigns growing part ids and returns the deadline', async () => {
        const store = await fresh();
        const results = await store.admit([item('1', { at: 0 }), item('2', { at: 0, debounceKey: 'other' })], 0);
        const [a, b] = results.map(accepted);
        expect(Number(b?.partId)).toBeGreaterThan(Number(a?.partId));
        expect(a?.deadline).toBe(1000);
      });
    });

    describe('correlation', () => {
      it('tells another bot\'s copy from a retry of the same bot, and a real repeat from both', async () => {
        const store = await fresh();
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
        expect(store.correlationStats().groups).toBe(1);
      });

      it('takes notices stamped within the tolerance as one event and farther apart as a new one', async () => {
        const store = await fresh();
        const notice = (bot: string, time: number) => item(`n${bot}${time}`, { correlation: step('n', delivery(bot, undefined), { kind: 'notice', time }) });
        expect(verdicts(await store.admit([notice('A', 100)], 0))).toEqual(['accepted']);
        expect(await store.admit([notice('B', 102)], 1)).toMatchObject([{ verdict: 'correlated', retry: false }]);
        // A notice has no id: the same bot again is a retry.
        expect(await store.admit([notice('A', 101)], 2)).toMatchObject([{ verdict: 'correlated', retry: true }]);
        expect(verdicts(await store.admit([notice('B', 105)], 3))).toEqual(['accepted']);
        expect((await store.correlation('n', 3))?.time).toBe(105);
      });

      it('ends a group at its expiry', async () => {
        const store = await fresh();
        await store.admit([item('1', { correlation: step('k', delivery('A', 'p1'), { windowMs: 1000 }) })], 0);
        expect(await store.admit([item('1', { correlation: step('k', delivery('B', 'q1')) })], 999)).toMatchObject([{ verdict: 'correlated' }]);
        expect(await store.correlation('k', 1000)).toBeUndefined();
        expect(verdicts(await store.admit([item('1', { correlation: step('k', delivery('B', 'q1')) })], 1000))).toEqual(['accepted']);
      });

      it('writes no group for an item a claim refused', async () => {
        const store = await fresh();
        await store.admit([item('1', { claims: ['x'] })], 0);
        expect(verdicts(await store.admit([item('1', { claims: ['x'], correlation: step('k', delivery('A', 'p1')) })], 1))).toEqual(['claimed']);
        expect(await store.correlation('k', 1)).toBeUndefined();
      });

      it('evicts the oldest group past the cap and counts it', async () => {
        const store = await fresh();
        for (let i = 0; i < 4100; i += 100) {
          await store.admit(Array.from({ length: 100 }, (_, j) => item(`${i + j}`, { correlation: step(`g${i + j}`, delivery('A', `${i + j}`)) })), i);
        }
        expect(store.correlationStats()).toEqual({ groups: 4096, evicted: 4 });
        expect(await store.correlation('g0', 4000)).toBeUndefined();
        expect(await store.correlation('g4', 4000)).toBeDefined();
      });
    });

    describe('deadlines', () => {
      it('closes a quiet buffer one window after its last part', async () => {
        const store = await fresh();
        await store.admit([item('1', { at: 0 })], 0);
        expect(accepted((await store.admit([item('2', { at: 800 })], 800))[0]).deadline).toBe(1800);
        expect(await store.nextDeadline()).toBe(1800);
        expect(await store.claimDue(1799, 100, 10)).toEqual([]);
        expect((await store.claimDue(1800, 100, 10)).map((b) => [b.reason, b.parts.length])).toEqual([['window', 2]]);
      });

      it('closes a busy buffer at maxWait after its first part', async () => {
        const store = await fresh();
        const busy = { ...rule, maxWaitMs: 1500 };
        await store.admit([item('1', { at: 0, rule: busy })], 0);
        expect(accepted((await store.admit([item('2', { at: 800, rule: busy })], 800))[0]).deadline).toBe(1500);
        expect((await store.claimDue(1500, 100, 10))[0]?.reason).toBe('max_wait');
      });

      it('closes at maxMessages counting an album once', async () => {
        const store = await fresh();
        const three = { ...rule, maxMessages: 3 };
        const album = await store.admit([1, 2, 3].map((n) => item(`a${n}`, { at: 10, unit: 'album', rule: three })), 10);
        expect(accepted(album[2]).deadline).toBe(1010);
        expect(accepted((await store.admit([item('b', { at: 20, rule: three })], 20))[0]).deadline).toBe(1020);
        expect(accepted((await store.admit([item('c', { at: 30, rule: three })], 30))[0]).deadline).toBe(30);
        const [batch] = await store.claimDue(30, 100, 10);
        expect(batch?.reason).toBe('count');
        expect(batch?.parts).toHaveLength(5);
      });

      it('closes at once on a command, with the command last', async () => {
        const store = await fresh();
        await store.admit([item('hello', { at: 0 })], 0);
        expect(accepted((await store.admit([item('/reset', { at: 5, closeNow: true })], 5))[0]).deadline).toBe(5);
        const [batch] = await store.claimDue(5, 100, 10);
        expect(batch?.reason).toBe('command');
        expect(batch?.parts.map((p) => p.event.text)).toEqual(['hello', '/reset']);
      });
    });

    describe('buffers with owners', () => {
      it('takes due buffers oldest deadline first, up to the limit', async () => {
        const store = await fresh();
        await store.admit([item('late', { sessionKey: 's1', at: 500 })], 500);
        await store.admit([item('early', { sessionKey: 's2', at: 0 })], 0);
        await store.admit([item('later', { sessionKey: 's3', at: 900 })], 900);
        expect(await store.openBuffers()).toBe(3);
        const batches = await store.claimDue(2000, 100, 2);
        expect(batches.map((b) => b.parts[0]?.event.text)).toEqual(['early', 'late']);
        expect((await store.claimDue(2000, 100, 2)).map((b) => b.sessionKey)).toEqual(['s3']);
      });

      it('keeps one buffer per session in flight, in order', async () => {
        const store = await fresh();
        await store.admit([item('alice', { debounceKey: 's/alice', at: 0 }), item('bob', { debounceKey: 's/bob', at: 100 })], 100);
        const [first, ...rest] = await store.claimDue(5000, 1000, 10);
        expect(rest).toEqual([]);
        expect(first?.debounceKey).toBe('s/alice');
        expect(await store.claimDue(5000, 1000, 10)).toEqual([]);
        await store.commit(first as NonNullable<typeof first>, draft('o1'), 5000);
        expect((await store.claimDue(5000, 1000, 10)).map((b) => b.debounceKey)).toEqual(['s/bob']);
      });

      it('lets a second owner take over an expired lease and refuses the first owner\'s commit', async () => {
        const store = await fresh();
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
        const store = await fresh();
        await store.admit([item('1', { at: 0 })], 0);
        const [batch] = await store.claimDue(1000, 100, 10);
        expect(await store.renewLease(batch as NonNullable<typeof batch>, 1090, 100)).toBe(true);
        expect(await store.claimDue(1150, 100, 10)).toEqual([]);
        expect(await store.nextDeadline()).toBe(1190);
      });

      it('lets a buffer be taken over when its lease runs out, also after a renewal that shortened it', async () => {
        const store = await fresh();
        await store.admit([item('1', { at: 0 })], 0);
        const [batch] = await store.claimDue(1000, 1000, 10);
        expect(await store.renewLease(batch as NonNullable<typeof batch>, 1100, 100)).toBe(true);
        expect(await store.nextDeadline()).toBe(1200);
        expect((await store.claimDue(1500, 1000, 10)).map((t) => t.reason)).toEqual(['takeover']);
      });

      it('keeps parts that arrive during a lease for the next batch', async () => {
        const store = await fresh();
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
        const store = await fresh();
        const three = { ...rule, maxMessages: 3 };
        await store.admit(['1', '2', '3', '4'].map((t) => item(t, { at: 0, rule: three })), 0);
        const [batch] = await store.claimDue(0, 100, 10);
        expect(batch?.reason).toBe('count');
        expect(batch?.parts.map((p) => p.event.text)).toEqual(['1', '2', '3']);
        await store.commit(batch as NonNullable<typeof batch>, draft('o1'), 1);
        expect(await store.nextDeadline()).toBe(1000);
        const [next] = await store.claimDue(1000, 100, 10);
        expect(next?.parts.map((p) => p.event.text)).toEqual(['4']);
      });

      it('closes a buffer at a command, with the command last', async () => {
        const store = await fresh();
        await store.admit([item('hi', { at: 0 }), item('/reset', { at: 0, closeNow: true }), item('after', { at: 0 })], 0);
        const [batch] = await store.claimDue(0, 100, 10);
        expect(batch?.reason).toBe('command');
        expect(batch?.parts.map((p) => p.event.text)).toEqual(['hi', '/reset']);
      });

      it('keeps a failed batch ahead of its session\'s later batches until it commits', async () => {
        const store = await fresh();
        await store.admit([item('first', { at: 0, debounceKey: 's/alice', closeNow: true }), item('/second', { at: 0, debounceKey: 's/bob', closeNow: true })], 0);
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
        const store = await fresh();
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

      it('takes every buffer not leased at shutdown', async () => {
        const store = await fresh();
        await store.admit([item('a', { debounceKey: 's/a' }), item('b', { debounceKey: 's/b' }), item('c', { sessionKey: 't' })], 0);
        const batches = await store.claimDue(Infinity, 1000, 10);
        expect(batches.map((b) => b.reason)).toEqual(['shutdown', 'shutdown', 'shutdown']);
      });

      it('retries one buffer of a session at a time when a shutdown gave back several after a failure', async () => {
        const store = await fresh();
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
      });

      it('keeps a batch given back behind its session\'s retrying one in its place, ahead of a later batch the claim left out', async () => {
        const store = await fresh();
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
      });

      it('takes a failed flush\'s buffer first and alone at shutdown: its session\'s other buffers come in the next round', async () => {
        const store = await fresh();
        await store.admit([item('a1', { at: 0, debounceKey: 's/a' }), item('t1', { at: 0, sessionKey: 't' })], 0);
        const [a] = (await store.claimDue(1000, 1000, 10)).filter((t) => t.sessionKey === 's');
        await store.release(a as NonNullable<typeof a>, 1600); // its flush failed: again at 1600
        await store.admit([item('b1', { at: 500, debounceKey: 's/b' }), item('b2', { at: 700, debounceKey: 's/c' })], 500);
        const texts = (batches: LeasedBatch[]) => batches.map((b) => b.parts.map((p) => p.event.text));
        const first = await store.claimDue(Infinity, 1000, 10);
        expect(texts(first.filter((t) => t.sessionKey === 's'))).toEqual([['a1']]);
        await store.commit(first.find((t) => t.sessionKey === 's') as LeasedBatch, draft('a'), 1700);
        expect(texts(await store.claimDue(Infinity, 1000, 10))).toEqual([['b1'], ['b2']]);
      });

      it('takes nothing more of a session at shutdown behind a batch cut by a command: the parts past the cut come next, in due order', async () => {
        const store = await fresh();
        // Session s: alice sent a command and then more; bob wrote after her; t is another session.
        await store.admit([
          item('/stop', { at: 0, debounceKey: 's/alice', closeNow: true }), item('after', { at: 10, debounceKey: 's/alice' }),
          item('bob', { at: 20, debounceKey: 's/bob' }), item('t1', { at: 30, sessionKey: 't' }),
        ], 30);
        const texts = (batches: LeasedBatch[]) => batches.map((b) => b.parts.map((p) => p.event.text));
        const first = await store.claimDue(Infinity, 1000, 10);
        expect(texts(first)).toEqual([['/stop'], ['t1']]);
        for (const [i, batch] of first.entries()) await store.commit(batch, draft(`o${i}`), 40);
        const second = await store.claimDue(Infinity, 1000, 10);
        expect(texts(second)).toEqual([['after'], ['bob']]);
      });
    });

    describe('outbox', () => {
      it('gives commits growing seqs and tells tail listeners in seq order', async () => {
        const store = await fresh();
        const seen: number[] = [];
        const stop = store.tail((record) => seen.push(record.seq));
        await store.admit(['a', 'b', 'c'].map((s) => item(s, { sessionKey: s })), 0);
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
        await store.commit((await store.claimDue(9000, 100, 10))[0] as NonNullable<Awaited<ReturnType<Store['claimDue']>>[number]>, draft('o3'), 9000);
        expect(seen).toHaveLength(3);
      });

      it('trims old records but never pending, dead, or ones a stream has not read', async () => {
        const store = await fresh();
        const ids = await commitAll(store, [draft('pending', 'pending', 'p'), draft('dead', 'pending', 'd'), draft('done1'), draft('done2'), draft('unread')]);
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
        const store = await fresh();
        const body = (id: string) => JSON.stringify({ type: 'chat.processedMessage', id, content: '订单 ORD-1 的状态? café 👋 \u0000' });
        const drafts = [{ ...draft('u1', 'pending'), body: body('u1') }, { ...draft('u2', 'pending', 'other'), body: body('u2') }];
        const seqs = await commitAll(store, drafts);
        expect((await store.outboxAfter(0, 10)).map((r) => r.body)).toEqual([body('u1'), body('u2')]);
        expect((await store.outboxGet('u1'))?.body).toBe(body('u1'));
        const leases = await store.claimPush(0, 100, 10);
        expect(leases.map((l) => l.record.body).sort()).toEqual([body('u1'), body('u2')]);
        const dead = leases.find((l) => l.record.id === 'u2') as PushLease;
        await store.ackPush(dead, { state: 'dead', attempts: 3, lastError: 'HTTP 500' }, 1);
        expect((await store.deadLetters(10)).map((r) => [r.id, r.seq, r.body])).toEqual([['u2', seqs.get('u2'), body('u2')]]);
      });

      it('trims at the exact count and the exact cutoff, and nothing short of them', async () => {
        const store = await fresh();
        await commitAll(store, Array.from({ length: 5 }, (_, i) => draft(`b${i + 1}`, 'none', 's', (i + 1) * 1000)));
        expect(await store.trimOutbox(1000, 5, Number.MAX_SAFE_INTEGER)).toBe(0); // 5 records, none older than 1000
        expect(await store.trimOutbox(1001, 5, Number.MAX_SAFE_INTEGER)).toBe(1); // b1 (1000) is older
        expect(await store.trimOutbox(0, 4, Number.MAX_SAFE_INTEGER)).toBe(0); // 4 left, 4 kept
        expect(await store.trimOutbox(0, 3, Number.MAX_SAFE_INTEGER)).toBe(1);
        expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['b3', 'b4', 'b5']);
      });

      it('keeps the newest keepCount records for replay, and undelivered and dead records besides them', async () => {
        const store = await fresh();
        await commitAll(store, [draft('p1', 'pending', 'p'), draft('d1', 'pending', 'd'), ...['n1', 'n2', 'n3', 'n4'].map((id) => draft(id))]);
        const [lease] = (await store.claimPush(0, 100, 10)).filter((l) => l.record.id === 'd1');
        await store.ackPush(lease as PushLease, { state: 'dead', attempts: 5, lastError: 'HTTP 500' }, 1);
        // The undelivered and dead records do not count against the newest three: n2-n4 stay replayable.
        expect(await store.trimOutbox(0, 3, Number.MAX_SAFE_INTEGER)).toBe(1);
        expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['p1', 'd1', 'n2', 'n3', 'n4']);
        expect(await store.trimOutbox(0, 3, Number.MAX_SAFE_INTEGER)).toBe(0);
      });

      it('keeps the newest keepCount records and those younger than the cutoff', async () => {
        const store = await fresh();
        await commitAll(store, Array.from({ length: 10 }, (_, i) => draft(`o${i + 1}`, 'none', 's', (i + 1) * 1000)));
        await store.trimOutbox(0, 4, Number.MAX_SAFE_INTEGER);
        expect((await store.outboxAfter(0, 20)).map((r) => r.id)).toEqual(['o7', 'o8', 'o9', 'o10']);
        await store.trimOutbox(9000, 100, Number.MAX_SAFE_INTEGER);
        expect((await store.outboxAfter(0, 20)).map((r) => r.id)).toEqual(['o9', 'o10']);
      });
    });

    describe('push queue', () => {
      it('never gives two pushers one session at once, keeps order, and holds the head on retry', async () => {
        const store = await fresh();
        await commitAll(store, [draft('r1', 'pending'), draft('r2', 'pending'), draft('r3', 'pending'), draft('x1', 'pending', 'other')]);
        const [a, b] = await Promise.all([store.claimPush(0, 100, 10), store.claimPush(0, 100, 10)]);
        const taken = [...(a ?? []), ...(b ?? [])].map((l) => l.record.id).sort();
        expect(taken).toEqual(['r1', 'x1']);
        const r1 = [...(a ?? []), ...(b ?? [])].find((l) => l.record.id === 'r1') as PushLease;
        expect(r1.record.body).toContain('"r1"');

        expect(await store.ackPush(r1, { state: 'retry', attempts: 1, at: 500, lastError: 'HTTP 503' }, 10)).toBe(true);
        expect(await store.ackPush(r1, { state: 'delivered', attempts: 1 }, 10)).toBe(false);
        expect(await store.nextPushAt()).toBe(100); // x1's lease expiry comes first
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
        const store = await fresh();
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
        const store = await fresh();
        await commitAll(store, ['d1', 'd2', 'd3'].map((id) => draft(id, 'pending', id)));
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
        const store = await fresh();
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

    describe('operations', () => {
      it('answers ping while open and refuses after close', async () => {
        const store = await open();
        await store.ping();
        await store.close();
        await expect(store.ping()).rejects.toThrow();
      });
    });

    if (!reopen) return;

    describe('restart', () => {
      it('keeps buffers, claims, correlation groups and the push queue', async () => {
        const store = await fresh();
        await store.admit([item('1', { claims: ['x'], at: 0, correlation: step('k', delivery('A', 'p1')) })], 0);
        await commitAll(store, [draft('r1', 'pending', 'q'), draft('r2', 'pending', 'q')], 10);
        const again = await restart(store);
        expect(verdicts(await again.admit([item('1', { claims: ['x'] })], 20))).toEqual(['claimed']);
        expect(await again.admit([item('1b', { correlation: step('k', delivery('B', 'q1')) })], 20)).toMatchObject([{ verdict: 'correlated', retry: false }]);
        expect(await again.openBuffers()).toBe(1);
        expect(await again.nextDeadline()).toBe(1000);
        expect((await again.claimDue(1000, 100, 10))[0]?.parts.map((p) => p.event.text)).toEqual(['1']);
        expect(await again.deliveryCounts()).toEqual({ pending: 2, dead: 0 });
        expect((await again.claimPush(20, 100, 10)).map((l) => l.record.id)).toEqual(['r1']);
      });

      it('never repeats a part id, seq or fence after a restart', async () => {
        const store = await fresh();
        const [a] = (await store.admit([item('1')], 0)).map(accepted);
        const [batch] = await store.claimDue(1000, 100, 10);
        const record = await store.commit(batch as NonNullable<typeof batch>, draft('o1'), 1000);
        const again = await restart(store);
        const [b] = (await again.admit([item('2')], 2000)).map(accepted);
        expect(Number(b?.partId)).toBeGreaterThan(Number(a?.partId));
        const [next] = await again.claimDue(3000, 100, 10);
        expect(next?.fence).toBeGreaterThan(batch?.fence as number);
        expect((await again.commit(next as NonNullable<typeof next>, draft('o2'), 3000))?.seq).toBeGreaterThan(record?.seq as number);
        expect(await again.lastSeq()).toBe(2);
      });
    });
  });
}

/** Commit one single-part batch per draft, in order; returns each draft's seq by id. */
async function commitAll(store: Store, drafts: ReturnType<typeof draft>[], now = 0): Promise<Map<string, number>> {
  const seqs = new Map<string, number>();
  for (const d of drafts) {
    await store.admit([item(d.id, { sessionKey: `batch:${d.id}`, at: now, closeNow: true })], now);
    const [batch] = await store.claimDue(now, 100, 1);
    const record = (await store.commit(batch as NonNullable<typeof batch>, d, now)) as OutboxRecord;
    seqs.set(d.id, record.seq);
  }
  return seqs;
}
