import { describe, expect, it } from 'vitest';
import {
  turnBufferKey,
  type LeasedBatch,
  type Store,
  type TurnCommit,
  type TurnMode,
  type TurnRule,
} from '../../core/ports/index.js';
import { draft, item } from './fixtures.js';
import { type StoreHarness } from './harness.js';

/** A turn rule: `mode`, 10 s maxMs and 3 held messages unless told. */
export const turnRule = (mode: TurnMode, maxMs = 10_000, maxHeld = 3): TurnRule => ({ mode, maxMs, maxHeld });

/** Admit one message of session `s` closing at once, take it and commit it as output `id` under `rule`. */
export async function arrive(
  store: Store,
  id: string,
  at: number,
  rule: TurnRule,
  sessionKey = 's',
): Promise<TurnCommit | undefined> {
  await store.admit([item(id, { sessionKey, at, closeNow: true })], at);
  const [batch] = await store.claimDue(at, 1000, 1);
  return store.commitTurn(batch as LeasedBatch, draft(`o-${id}`, 'none', sessionKey, at), at, rule);
}

/** Take the session's due held batch at `now` and commit it as output `id`; the texts it carried. */
export async function release(
  store: Store,
  id: string,
  now: number,
  rule: TurnRule,
  sessionKey = 's',
): Promise<{ texts: string[]; done: TurnCommit | undefined }> {
  const batches = await store.claimDue(now, 1000, 10);
  const batch = batches.find((b) => b.debounceKey === turnBufferKey(sessionKey));
  if (!batch) return { texts: [], done: undefined };
  return {
    texts: batch.parts.map((part) => part.event.text),
    done: await store.commitTurn(batch, draft(id, 'none', sessionKey, now), now, rule),
  };
}

const linkOf = (done: TurnCommit | undefined) => (done && !done.held ? done.link : undefined);

/** Agent turns (docs/turns.md): what each mode does with a batch closing while a turn is open. */
export function describeTurns(h: StoreHarness): void {
  describe('agent turns', () => {
    it('collect: holds batches during a turn and releases them merged, following it up, when it is done', async () => {
      const store = await h.fresh();
      const rule = turnRule('collect');
      expect(await arrive(store, 'a', 0, rule)).toMatchObject({ held: false, record: { id: 'o-a' } });
      expect(await store.turnOf('s', 1)).toEqual({
        sessionKey: 's',
        open: true,
        outputId: 'o-a',
        openedAt: 0,
        until: 10_000,
        held: 0,
      });
      expect(await arrive(store, 'b', 100, rule)).toEqual({ held: true, by: 'o-a', until: 10_000, count: 1 });
      expect(await arrive(store, 'c', 200, rule)).toEqual({ held: true, by: 'o-a', until: 10_000, count: 2 });
      expect(await store.nextDeadline()).toBe(10_000);
      expect(await store.claimDue(300, 1000, 10)).toEqual([]);
      expect(await store.turnDone('o-a', 300)).toEqual({ result: 'closed', sessionKey: 's', held: 2 });
      const { texts, done } = await release(store, 'o-bc', 300, rule);
      expect(texts).toEqual(['b', 'c']);
      expect(linkOf(done)).toEqual({ field: 'followsUp', id: 'o-a' });
      expect(JSON.parse((done as { record: { body: string } }).record.body)).toMatchObject({
        id: 'o-bc',
        followsUp: 'o-a',
      });
      expect(JSON.parse((await store.outboxGet('o-bc'))?.body ?? '{}')).toMatchObject({ followsUp: 'o-a' });
      expect(await store.turnOf('s', 301)).toMatchObject({ open: true, outputId: 'o-bc', until: 10_300, held: 0 });
      expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['o-a', 'o-bc']);
    });

    it('answers a done for an unknown id, a closed turn and an output that opened no turn', async () => {
      const store = await h.fresh();
      const rule = turnRule('collect');
      await arrive(store, 'a', 0, rule);
      expect(await store.turnDone('nope', 10)).toEqual({ result: 'unknown' });
      expect(await store.turnDone('o-a', 10)).toMatchObject({ result: 'closed', held: 0 });
      expect(await store.turnDone('o-a', 11)).toMatchObject({ result: 'already', sessionKey: 's' });
      expect(await store.turnOf('s', 12)).toEqual({ sessionKey: 's', open: false, held: 0 });
      // Another session's turn is its own: a done names one output, and closes only its session's turn.
      await arrive(store, 'x', 20, rule, 't');
      await arrive(store, 'b', 30, rule);
      expect(await store.turnDone('o-x', 40)).toMatchObject({ result: 'closed', sessionKey: 't' });
      expect(await store.turnOf('s', 41)).toMatchObject({ open: true, outputId: 'o-b' });
    });

    it('followup: queues held batches and releases them one at a time, each following the turn before', async () => {
      const store = await h.fresh();
      const rule = turnRule('followup');
      await arrive(store, 'a', 0, rule);
      await arrive(store, 'b', 10, rule);
      expect(await arrive(store, 'c', 20, rule)).toMatchObject({ held: true, count: 2 });
      await store.turnDone('o-a', 30);
      const first = await release(store, 'o-b', 30, rule);
      expect(first.texts).toEqual(['b']);
      expect(linkOf(first.done)).toEqual({ field: 'followsUp', id: 'o-a' });
      // c waits for the turn b opened.
      expect(await store.turnOf('s', 31)).toMatchObject({ open: true, outputId: 'o-b', held: 1 });
      expect(await store.nextDeadline()).toBe(10_030);
      expect(await store.claimDue(40, 1000, 10)).toEqual([]);
      const second = await release(store, 'o-c', 10_030, rule);
      expect(second.texts).toEqual(['c']);
      expect(linkOf(second.done)).toEqual({ field: 'followsUp', id: 'o-b' });
    });

    it('steer: emits at once during the open turn, which stays open', async () => {
      const store = await h.fresh();
      const rule = turnRule('steer');
      await arrive(store, 'a', 0, rule);
      const done = await arrive(store, 'b', 10, rule);
      expect(linkOf(done)).toEqual({ field: 'during', id: 'o-a' });
      expect(JSON.parse((await store.outboxGet('o-b'))?.body ?? '{}')).toMatchObject({ during: 'o-a' });
      expect(await store.turnOf('s', 11)).toMatchObject({ open: true, outputId: 'o-a' });
      expect(await store.turnDone('o-b', 12)).toMatchObject({ result: 'already' });
    });

    it('interrupt: emits at once, closing the open turn; the new output opens the next', async () => {
      const store = await h.fresh();
      const rule = turnRule('interrupt');
      await arrive(store, 'a', 0, rule);
      expect(linkOf(await arrive(store, 'b', 10, rule))).toEqual({ field: 'interrupts', id: 'o-a' });
      expect(await store.turnOf('s', 11)).toMatchObject({ open: true, outputId: 'o-b' });
      expect(await store.turnDone('o-a', 12)).toMatchObject({ result: 'already' });
    });

    it('releases held messages when the turn runs out (maxMs) or holds maxHeld of them', async () => {
      const store = await h.fresh();
      const rule = turnRule('collect', 1000, 2);
      await arrive(store, 'a', 0, rule);
      await arrive(store, 'b', 10, rule);
      expect(await store.nextDeadline()).toBe(1000);
      const expired = await release(store, 'o-b', 1000, rule);
      expect(expired.texts).toEqual(['b']);
      expect(linkOf(expired.done)).toEqual({ field: 'followsUp', id: 'o-a' });
      await arrive(store, 'c', 1010, rule);
      await arrive(store, 'd', 1020, rule);
      // Two held: the turn counts as closed.
      const full = await release(store, 'o-cd', 1030, rule);
      expect(full.texts).toEqual(['c', 'd']);
      expect(linkOf(full.done)).toEqual({ field: 'followsUp', id: 'o-b' });
    });

    it('off opens no turn; a batch behind held messages joins them whatever the mode now is', async () => {
      const store = await h.fresh();
      expect(linkOf(await arrive(store, 'z', 0, turnRule('off')))).toBeUndefined();
      expect(await store.turnOf('s', 1)).toMatchObject({ open: false });
      await arrive(store, 'a', 10, turnRule('collect'));
      await arrive(store, 'b', 20, turnRule('collect'));
      // The mode changed (a restart with a new config): b still waits under the rule it was held by, c behind it.
      expect(await arrive(store, 'c', 30, turnRule('steer'))).toMatchObject({ held: true, count: 2 });
      await store.turnDone('o-a', 40);
      expect((await release(store, 'o-bc', 40, turnRule('steer'))).texts).toEqual(['b', 'c']);
    });

    it('emits notices at once, holding nothing and opening no turn', async () => {
      const store = await h.fresh();
      const rule = turnRule('collect');
      await arrive(store, 'a', 0, rule);
      await store.admit([item('n', { at: 10, closeNow: true })], 10);
      const [batch] = await store.claimDue(10, 1000, 1);
      const notice = { ...draft('o-n', 'none', 's', 10), type: 'chat.notice' as const };
      expect(await store.commitTurn(batch as LeasedBatch, notice, 10, rule)).toMatchObject({
        held: false,
        record: { id: 'o-n' },
      });
      expect(await store.turnOf('s', 11)).toMatchObject({ open: true, outputId: 'o-a' });
    });

    it('lists open turns and sessions with held messages', async () => {
      const store = await h.fresh();
      const rule = turnRule('collect', 1000);
      await arrive(store, 'a', 0, rule, 's1');
      await arrive(store, 'b', 10, rule, 's1');
      await arrive(store, 'c', 20, rule, 's2');
      expect((await store.openTurns(30, 10)).map((t) => [t.sessionKey, t.held])).toEqual([
        ['s1', 1],
        ['s2', 0],
      ]);
      expect((await store.openTurns(1500, 10)).map((t) => [t.sessionKey, t.open, t.held])).toEqual([['s1', false, 1]]);
    });

    it('lists and counts open turns past many that ran out before them', async () => {
      const store = await h.fresh();
      const rule = turnRule('collect', 1000);
      for (let i = 0; i < 60; i++) await arrive(store, `old${i}`, i, rule, `old${i}`);
      expect(await store.openTurnCount(500)).toBe(60);
      expect(await store.openTurnCount(1030)).toBe(29);
      await arrive(store, 'new', 5000, rule, 'live');
      expect((await store.openTurns(5001, 10)).map((t) => [t.sessionKey, t.open])).toEqual([['live', true]]);
      expect(await store.openTurnCount(5001)).toBe(1);
    });
  });
}

/** What a durable store keeps of turns across a restart. */
export function describeTurnRestart(h: StoreHarness): void {
  describe('agent turns across a restart', () => {
    it('keeps the turn and its held messages, released once after the restart', async () => {
      const store = await h.fresh();
      const rule = turnRule('followup');
      await arrive(store, 'a', 0, rule);
      await arrive(store, 'b', 10, rule);
      await arrive(store, 'c', 20, rule);
      const again = await h.restart(store);
      expect(await again.turnOf('s', 30)).toEqual({
        sessionKey: 's',
        open: true,
        outputId: 'o-a',
        openedAt: 0,
        until: 10_000,
        held: 2,
      });
      expect(await again.nextDeadline()).toBe(10_000);
      expect(await again.turnDone('o-a', 40)).toMatchObject({ result: 'closed', held: 2 });
      // Released under the rule they were held by (followup), whatever the rule now is.
      const first = await release(again, 'o-b', 40, turnRule('collect'));
      expect(first.texts).toEqual(['b']);
      const last = await h.restart(again);
      expect(await last.turnOf('s', 50)).toMatchObject({ open: true, outputId: 'o-b', held: 1 });
      await last.turnDone('o-b', 60);
      expect((await release(last, 'o-c', 60, turnRule('collect'))).texts).toEqual(['c']);
      expect((await last.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['o-a', 'o-b', 'o-c']);
      expect(await last.openBuffers()).toBe(0);
    });
  });
}
