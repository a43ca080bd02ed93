import { describe, expect, it } from 'vitest';
import { turnBufferKey, type ContextKeep, type LeasedBatch, type Store } from '../../core/ports/index.js';
import type { ContextMessage } from '../../events/context.js';
import { draft, item } from './fixtures.js';
import { type StoreHarness } from './harness.js';
import { arrive, turnRule } from './turns.js';

/** A context message whose id and text are `id`, from sender `u` unless told. */
export function contextMessage(id: string, sender = 'u'): ContextMessage {
  return {
    messageId: id,
    sender: { id: sender },
    content: id,
    timestamp: 1,
    media: [{ type: 'image', ref: `r-${id}` }],
  };
}

/** Keep up to 3 messages for a minute unless told. */
const keep = (maxMessages = 3, ttlMs = 60_000): ContextKeep => ({ maxMessages, ttlMs });

/** Admit one message of `sessionKey` closing at once and take it under a lease of 1 s. */
async function take(store: Store, text: string, at: number, sessionKey = 's'): Promise<LeasedBatch> {
  await store.admit([item(text, { sessionKey, at, closeNow: true })], at);
  const batches = await store.claimDue(at, 1000, 10);
  const batch = batches.find((b) => b.sessionKey === sessionKey);
  if (!batch) throw new Error(`nothing due for ${sessionKey} at ${at}`);
  return batch;
}

/** Take a batch of `text` and keep it as context; the kept entries' ids after. */
async function kept(store: Store, text: string, at: number, sessionKey = 's', k = keep()): Promise<string[]> {
  expect(await store.keepContext(await take(store, text, at, sessionKey), [contextMessage(text)], at, k)).toBe(true);
  return ids(store, sessionKey, at);
}

async function ids(store: Store, sessionKey: string, now: number): Promise<string[]> {
  return (await store.conversation(sessionKey, now)).context.map((entry) => entry.message.messageId);
}

/** Conversations (§12 of the contract): context kept between outputs, and activation overrides. */
export function describeConversations(h: StoreHarness): void {
  describe('conversations', () => {
    it('knows nothing of a session never kept', async () => {
      const store = await h.fresh();
      expect(await store.conversation('s', 0)).toEqual({ context: [], dropped: 0 });
    });

    it('keeps context oldest first under growing seqs, trims the oldest past maxMessages and counts them', async () => {
      const store = await h.fresh();
      expect(await kept(store, 'a', 0)).toEqual(['a']);
      await kept(store, 'b', 10);
      await kept(store, 'x', 15, 'other');
      const batch = await take(store, 'c', 20);
      expect(await store.keepContext(batch, [contextMessage('c'), contextMessage('d', 'v')], 20, keep())).toBe(true);
      const state = await store.conversation('s', 21);
      expect(state.context.map((entry) => entry.message)).toEqual([
        contextMessage('b'),
        contextMessage('c'),
        contextMessage('d', 'v'),
      ]);
      expect(state.dropped).toBe(1);
      expect(state.context.map((entry) => entry.at)).toEqual([10, 20, 20]);
      const seqs = state.context.map((entry) => entry.seq);
      expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
      expect(new Set(seqs).size).toBe(3);
      // the batch left its buffer as a commit's would
      expect(await store.openBuffers()).toBe(0);
      expect(await ids(store, 'other', 21)).toEqual(['x']);
    });

    it('keeps none with maxMessages 0 and counts every one, and stays bounded however many arrive', async () => {
      const store = await h.fresh();
      expect(await kept(store, 'a', 0, 's', keep(0))).toEqual([]);
      expect((await store.conversation('s', 1)).dropped).toBe(1);
      const many = Array.from({ length: 500 }, (_, n) => contextMessage(`m${n}`));
      expect(await store.keepContext(await take(store, 'b', 10, 't'), many, 10, keep(2))).toBe(true);
      expect(await store.keepContext(await take(store, 'c', 20, 't'), many, 20, keep(2))).toBe(true);
      expect(await store.conversation('t', 21)).toMatchObject({ dropped: 998 });
      expect(await ids(store, 't', 21)).toEqual(['m498', 'm499']);
    });

    it('changes nothing for a stale fence: neither the buffer nor the context', async () => {
      const store = await h.fresh();
      await kept(store, 'a', 0);
      const stale = await take(store, 'b', 100);
      // the lease runs out; another owner takes the buffer under a new fence
      const [again] = await store.claimDue(1100, 1000, 10);
      expect(again?.fence).toBeGreaterThan(stale.fence);
      expect(await store.keepContext(stale, [contextMessage('b')], 1200, keep())).toBe(false);
      expect(await ids(store, 's', 1200)).toEqual(['a']);
      expect(await store.openBuffers()).toBe(1);
      expect(await store.keepContext(again as LeasedBatch, [contextMessage('b')], 1200, keep())).toBe(true);
      expect(await ids(store, 's', 1201)).toEqual(['a', 'b']);
    });

    it('leaves parts that arrived after the batch in the buffer, due again', async () => {
      const store = await h.fresh();
      await store.admit([item('a', { at: 0 })], 0);
      const [batch] = await store.claimDue(1000, 5000, 10);
      await store.admit([item('b', { at: 1500 })], 1500);
      expect(await store.keepContext(batch as LeasedBatch, [contextMessage('a')], 1600, keep())).toBe(true);
      expect(await store.openBuffers()).toBe(1);
      expect(await store.nextDeadline()).toBe(2500);
      const [next] = await store.claimDue(2500, 1000, 10);
      expect(next?.parts.map((part) => part.event.text)).toEqual(['b']);
    });

    it("clears the context an output carried in its commit, and what was kept after the output's read stays", async () => {
      const store = await h.fresh();
      await kept(store, 'a', 0, 's', keep(1));
      await kept(store, 'b', 10, 's', keep(1));
      const read = await store.conversation('s', 20);
      expect(read.dropped).toBe(1);
      await kept(store, 'c', 30, 's', keep(5));
      const batch = await take(store, 'd', 40);
      const upTo = (read.context.at(-1) as { seq: number }).seq;
      expect(await store.commit(batch, { ...draft('o-d'), contextUpTo: upTo }, 40)).toMatchObject({ id: 'o-d' });
      expect(await store.conversation('s', 41)).toMatchObject({ dropped: 0 });
      expect(await ids(store, 's', 41)).toEqual(['c']);
      // the record is the output's, without the field
      expect(await store.outboxGet('o-d')).not.toHaveProperty('contextUpTo');
      expect((await store.outboxAfter(0, 10)).map((record) => Object.keys(record))).not.toContainEqual(
        expect.arrayContaining(['contextUpTo']),
      );
    });

    it('clears nothing for a commit with a stale fence', async () => {
      const store = await h.fresh();
      await kept(store, 'a', 0);
      const stale = await take(store, 'b', 100);
      await store.claimDue(1100, 1000, 10);
      const seq = (await store.conversation('s', 1100)).context[0]?.seq as number;
      expect(await store.commit(stale, { ...draft('o-b'), contextUpTo: seq }, 1200)).toBeUndefined();
      expect(await ids(store, 's', 1200)).toEqual(['a']);
    });

    it('clears the context with an emitted turn commit; a held one leaves it for the output it becomes at release', async () => {
      const store = await h.fresh();
      const rule = turnRule('collect');
      await kept(store, 'a', 0);
      let seq = (await store.conversation('s', 1)).context[0]?.seq as number;
      const first = await take(store, 'b', 10);
      expect(await store.commitTurn(first, { ...draft('o-b'), contextUpTo: seq }, 10, rule)).toMatchObject({
        held: false,
      });
      expect(await store.conversation('s', 11)).toEqual({ context: [], dropped: 0 });
      await kept(store, 'c', 20);
      seq = (await store.conversation('s', 21)).context[0]?.seq as number;
      await kept(store, 'e', 25);
      // the turn b opened is open: this batch is held, not emitted, and the context stays
      const second = await take(store, 'd', 30);
      expect(await store.commitTurn(second, { ...draft('o-d'), contextUpTo: seq }, 30, rule)).toMatchObject({
        held: true,
      });
      expect(await ids(store, 's', 31)).toEqual(['c', 'e']);
    });

    it('keeps a released held batch as context (its conversation now takes none): the held buffer and the turn are done with', async () => {
      const store = await h.fresh();
      const rule = turnRule('collect');
      expect(await arrive(store, 'a', 0, rule)).toMatchObject({ held: false });
      expect(await arrive(store, 'b', 10, rule)).toMatchObject({ held: true });
      expect(await arrive(store, 'c', 20, rule)).toMatchObject({ held: true });
      expect(await store.turnDone('o-a', 30)).toMatchObject({ result: 'closed', held: 2 });
      const released = (await store.claimDue(30, 1000, 10)).find((b) => b.debounceKey === turnBufferKey('s'));
      expect(released?.parts.map((part) => part.event.text)).toEqual(['b', 'c']);
      const messages = ['b', 'c'].map((id) => contextMessage(id));
      expect(await store.keepContext(released as LeasedBatch, messages, 40, keep())).toBe(true);
      expect(await ids(store, 's', 41)).toEqual(['b', 'c']);
      expect(await store.openBuffers()).toBe(0);
      expect(await store.claimDue(100_000, 1000, 10)).toEqual([]);
      // the next batch of the session is emitted, opening a turn of its own
      expect(await arrive(store, 'd', 50, rule)).toMatchObject({ held: false, record: { id: 'o-d' } });
      expect(await store.turnOf('s', 51)).toMatchObject({ open: true, outputId: 'o-d', held: 0 });
    });

    it('forgets the context ttlMs after its last append', async () => {
      const store = await h.fresh();
      // (a shared store's keys also expire by its server's clock: ttlMs well past the test's run)
      await kept(store, 'a', 0, 's', keep(3, 10_000));
      await kept(store, 'b', 5000, 's', keep(3, 10_000));
      expect(await ids(store, 's', 14_999)).toEqual(['a', 'b']);
      expect(await store.conversation('s', 15_000)).toEqual({ context: [], dropped: 0 });
      // a later append starts afresh
      expect(await kept(store, 'c', 20_000, 's', keep(3, 10_000))).toEqual(['c']);
    });

    it('sets, reads and removes an activation override, with no expiry, beside the context', async () => {
      const store = await h.fresh();
      await store.setActivation('s', { group: 'mention' }, 0);
      expect(await store.conversation('s', 10 ** 9)).toEqual({
        activation: { group: 'mention' },
        context: [],
        dropped: 0,
      });
      await store.setActivation('s', { group: 'never', private: 'always' }, 1);
      await kept(store, 'a', 2);
      expect(await store.conversation('s', 3)).toMatchObject({
        activation: { group: 'never', private: 'always' },
        dropped: 0,
      });
      expect(await store.conversation('t', 3)).toEqual({ context: [], dropped: 0 });
      await store.setActivation('s', undefined, 4);
      expect(await store.conversation('s', 5)).not.toHaveProperty('activation');
      expect(await ids(store, 's', 5)).toEqual(['a']);
    });

    it('gives the override when asked for it alone, leaving the context out or not', async () => {
      const store = await h.fresh();
      await kept(store, 'a', 0);
      await store.setActivation('s', { group: 'never' }, 1);
      const state = await store.conversation('s', 2, { context: false });
      expect(state.activation).toEqual({ group: 'never' });
      // Only the override was asked for: a store may skip reading the context, or give it anyway.
      expect([[], ['a']]).toContainEqual(state.context.map((entry) => entry.message.messageId));
      expect(await store.conversation('t', 2, { context: false })).not.toHaveProperty('activation');
    });
  });
}

/** What a durable store keeps of its conversations across a restart. */
export function describeConversationRestart(h: StoreHarness): void {
  describe('conversations across a restart', () => {
    it('keeps the context, its dropped count, its seqs going up, and the overrides', async () => {
      const store = await h.fresh();
      await kept(store, 'a', 0, 's', keep(1));
      await kept(store, 'b', 10, 's', keep(1));
      await store.setActivation('s', { private: 'mention' }, 20);
      const before = await store.conversation('s', 30);
      const again = await h.restart(store);
      expect(await again.conversation('s', 30)).toEqual(before);
      await kept(again, 'c', 40, 's', keep(2));
      const after = await again.conversation('s', 41);
      expect(after.context.map((entry) => entry.message.messageId)).toEqual(['b', 'c']);
      expect((after.context[1] as { seq: number }).seq).toBeGreaterThan((before.context[0] as { seq: number }).seq);
    });
  });
}
