import { describe, expect, it } from 'vitest';
import type { RevisionKeep, Store } from '../../core/ports/index.js';
import type { Revision } from '../../events/context.js';
import { contextMessage } from './conversations.js';
import { delivery, item, step } from './fixtures.js';
import { type StoreHarness } from './harness.js';

/** Keep up to 4 revisions for a minute unless told. */
const keep = (maxRevisions = 4, ttlMs = 60_000): RevisionKeep => ({ maxRevisions, ttlMs });
const recall = (messageId: string, at: number): Revision => ({ kind: 'recall', messageId, at });
const edit = (messageId: string, content: string, at: number): Revision => ({ kind: 'edit', messageId, at, content });

/** Keep the message `text` of session `s` as context at `at`. */
async function keptAsContext(store: Store, text: string, at: number): Promise<void> {
  await store.admit([item(text, { at, closeNow: true, debounceKey: `k-${text}` })], at);
  const [batch] = await store.claimDue(at, 1000, 10);
  expect(await store.keepContext(batch!, [contextMessage(text)], at, { maxMessages: 10, ttlMs: 60_000 })).toBe(true);
}

/** Recalls and edits (contract §13): kept per session, applied to context at once, found in buffers. */
export function describeRevisions(h: StoreHarness): void {
  describe('revisions', () => {
    it('keeps a session’s revisions oldest first, an edit replacing the earlier edit of its message', async () => {
      const store = await h.fresh();
      const none = { recorded: true, buffered: false, context: false };
      expect(await store.revise('s', ['s'], edit('a', 'A1', 10), 10, keep())).toEqual(none);
      expect(await store.revise('s', ['s'], recall('b', 20), 20, keep())).toEqual(none);
      expect(await store.revise('s', ['s'], edit('a', 'A2', 30), 30, keep())).toEqual(none);
      expect((await store.conversation('s', 31)).revisions).toEqual([recall('b', 20), edit('a', 'A2', 30)]);
      // another session, and the override-only read, see the same
      expect((await store.conversation('t', 31)).revisions ?? []).toEqual([]);
      expect((await store.conversation('s', 31, { context: false })).revisions).toEqual([
        recall('b', 20),
        edit('a', 'A2', 30),
      ]);
    });

    it('records nothing for a message recalled already: a second report, or an edit after the recall', async () => {
      const store = await h.fresh();
      await keptAsContext(store, 'a', 0);
      expect((await store.revise('s', ['s'], recall('a', 10), 10, keep())).recorded).toBe(true);
      const nothing = { recorded: false, buffered: false, context: false };
      expect(await store.revise('s', ['s'], recall('a', 20), 20, keep())).toEqual(nothing);
      expect(await store.revise('s', ['s'], edit('a', 'late', 30), 30, keep())).toEqual(nothing);
      expect((await store.conversation('s', 31)).revisions).toEqual([recall('a', 10)]);
    });

    it('keeps at most maxRevisions, each for ttlMs from its time', async () => {
      const store = await h.fresh();
      for (let n = 0; n < 6; n++) await store.revise('s', ['s'], recall(`m${n}`, n * 100), n * 100, keep(4, 1000));
      expect((await store.conversation('s', 500)).revisions?.map((r) => r.messageId)).toEqual(['m2', 'm3', 'm4', 'm5']);
      expect((await store.conversation('s', 1250)).revisions?.map((r) => r.messageId)).toEqual(['m3', 'm4', 'm5']);
      expect((await store.conversation('s', 1600)).revisions ?? []).toEqual([]);
      // a recall gone with its time is recorded again
      expect((await store.revise('s', ['s'], recall('m5', 1600), 1600, keep(4, 1000))).recorded).toBe(true);
    });

    it('takes a recalled message out of the kept context, and rewrites an edited one', async () => {
      const store = await h.fresh();
      await keptAsContext(store, 'a', 0);
      await keptAsContext(store, 'b', 1);
      await keptAsContext(store, 'c', 2);
      expect(await store.revise('s', ['s'], recall('b', 10), 10, keep())).toEqual({
        recorded: true,
        buffered: false,
        context: true,
      });
      expect((await store.revise('s', ['s'], edit('c', 'C!', 11), 11, keep())).context).toBe(true);
      const context = (await store.conversation('s', 12)).context.map((entry) => entry.message);
      expect(context).toEqual([contextMessage('a'), { ...contextMessage('c'), content: 'C!' }]);
      // another session's message of that id is not touched
      expect((await store.revise('t', ['t'], recall('a', 13), 13, keep())).context).toBe(false);
      expect((await store.conversation('s', 14)).context).toHaveLength(2);
    });

    it('finds a message waiting in a buffer named, leaves its parts to the flush, and not in one not named', async () => {
      const store = await h.fresh();
      await store.admit([item('a', { at: 0 }), item('b', { at: 0, debounceKey: 'other' })], 0);
      expect((await store.revise('s', ['s'], recall('a', 10), 10, keep())).buffered).toBe(true);
      expect((await store.revise('s', ['s'], edit('b', 'B', 10), 10, keep())).buffered).toBe(false);
      expect((await store.revise('s', ['nothing', 'other'], edit('b', 'B', 10), 10, keep())).buffered).toBe(true);
      // one buffer of a session at a time: both come out as they were
      const texts: string[] = [];
      for (let n = 0; n < 2; n++) {
        const [batch] = await store.claimDue(1000, 1000, 10);
        texts.push(...batch!.parts.map((p) => p.event.text));
        expect(await store.keepContext(batch!, [], 1000, { maxMessages: 10, ttlMs: 1000 })).toBe(true);
      }
      expect(texts.sort()).toEqual(['a', 'b']);
    });

    it('knows a buffered message by another bot’s id for it, from its correlation group', async () => {
      const store = await h.fresh();
      // as admission buffers a correlated part: with its group's key
      const copy = (at: number, bot: string, id: string) => {
        const made = item('m', { at, correlation: step('k', delivery(bot, id)) });
        return { ...made, part: { ...made.part, correlationKey: 'k' } };
      };
      await store.admit([copy(0, 'A', 'A:1')], 0);
      await store.admit([copy(10, 'B', 'B:7')], 10);
      expect((await store.revise('s', ['s'], recall('B:7', 20), 20, keep())).buffered).toBe(true);
      expect((await store.revise('s', ['s'], recall('C:7', 20), 20, keep())).buffered).toBe(false);
    });

    it('ends the flush lease of a buffer that holds the message: that flush commits nothing, the buffer is due at once', async () => {
      const store = await h.fresh();
      await store.admit([item('a', { at: 0 }), item('b', { at: 0 })], 0);
      const [batch] = await store.claimDue(1000, 10_000, 10);
      expect(batch!.parts).toHaveLength(2);
      expect((await store.revise('s', ['s'], recall('a', 1100), 1100, keep())).buffered).toBe(true);
      expect(await store.renewLease(batch!, 1100, 10_000)).toBe(false);
      expect(await store.keepContext(batch!, [], 1100, { maxMessages: 10, ttlMs: 1000 })).toBe(false);
      const [again] = await store.claimDue(1100, 10_000, 10);
      expect(again?.parts.map((p) => p.event.text)).toEqual(['a', 'b']);
      expect(again!.fence).not.toBe(batch!.fence);
      expect(await store.keepContext(again!, [], 1100, { maxMessages: 10, ttlMs: 1000 })).toBe(true);
      expect(await store.openBuffers()).toBe(0);
    });

    it('leaves a flush lease alone when the message is not in its buffer', async () => {
      const store = await h.fresh();
      await store.admit([item('a', { at: 0 })], 0);
      const [batch] = await store.claimDue(1000, 10_000, 10);
      expect((await store.revise('s', ['s'], recall('zzz', 1100), 1100, keep())).buffered).toBe(false);
      expect(await store.renewLease(batch!, 1100, 10_000)).toBe(true);
    });
  });
}

const hold = { holdMs: 1000, maxMs: 2500 };

/** A human taking over (contract §13): started, extended within maxMs, ended by hand or when due. */
export function describeTakeovers(h: StoreHarness): void {
  describe('takeovers', () => {
    it('starts a takeover, extends it by each human message, never past maxMs from its start', async () => {
      const store = await h.fresh();
      expect(await store.holdTakeover('s', 100, hold, 100)).toEqual({
        started: true,
        takeover: { since: 100, until: 1100 },
      });
      expect((await store.conversation('s', 200)).takeover).toEqual({ since: 100, until: 1100 });
      expect(await store.holdTakeover('s', 900, hold, 900)).toEqual({
        started: false,
        takeover: { since: 100, until: 1900 },
      });
      // an earlier message never shortens it
      expect((await store.holdTakeover('s', 300, hold, 950)).takeover).toEqual({ since: 100, until: 1900 });
      expect((await store.holdTakeover('s', 1800, hold, 1800)).takeover).toEqual({ since: 100, until: 2600 });
      expect((await store.holdTakeover('s', 2500, hold, 2500)).takeover).toEqual({ since: 100, until: 2600 });
      expect((await store.conversation('t', 200)).takeover).toBeUndefined();
    });

    it('ends a due takeover once, only the one named, only when due', async () => {
      const store = await h.fresh();
      await store.holdTakeover('s', 100, hold, 100);
      expect(await store.endTakeover('s', 1099, 100)).toBeUndefined();
      expect(await store.endTakeover('s', 1100, 99)).toBeUndefined();
      expect(await store.endTakeover('s', 1100, 100)).toEqual({ since: 100, until: 1100 });
      expect(await store.endTakeover('s', 1100, 100)).toBeUndefined();
      expect((await store.conversation('s', 1100)).takeover).toBeUndefined();
    });

    it('ends a takeover by hand whatever it is; one not ended is ended by the next start', async () => {
      const store = await h.fresh();
      await store.holdTakeover('s', 0, hold, 0);
      expect(await store.endTakeover('s', 10)).toEqual({ since: 0, until: 1000 });
      expect(await store.endTakeover('s', 10)).toBeUndefined();
      await store.holdTakeover('s', 20, hold, 20);
      expect(await store.holdTakeover('s', 5000, hold, 5000)).toEqual({
        started: true,
        takeover: { since: 5000, until: 6000 },
        ended: { since: 20, until: 1020 },
      });
      // a takeover for a session nothing was ever said in
      expect((await store.holdTakeover('new', 7, { holdMs: 5000, maxMs: 100 }, 7)).takeover).toEqual({
        since: 7,
        until: 107,
      });
    });
  });
}

/** Revisions and takeovers outlive a restart of a durable store. */
export function describeRevisionRestart(h: StoreHarness): void {
  describe('revisions and takeovers across a restart', () => {
    it('keeps them', async () => {
      const store = await h.fresh();
      await store.revise('s', ['s'], edit('a', 'A', 10), 10, keep());
      await store.holdTakeover('s', 10, hold, 10);
      const again = await h.restart(store);
      const state = await again.conversation('s', 20);
      expect(state.revisions).toEqual([edit('a', 'A', 10)]);
      expect(state.takeover).toEqual({ since: 10, until: 1010 });
    });
  });
}
