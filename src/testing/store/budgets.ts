import { describe, expect, it } from 'vitest';
import { budgetBufferKey, type BudgetSpend, type LeasedBatch, type Store } from '../../core/ports/index.js';
import { draft, item, rule } from './fixtures.js';
import { type StoreHarness } from './harness.js';

/** A budget of `limit` spends per second unless told. */
const budget = (key: string, limit: number, windowMs = 1000): BudgetSpend => ({ key, limit, windowMs });

/** The buffer session `s` defers its batches to under the budget `sender:u`. */
const deferKey = budgetBufferKey('s', 'sender:u');

/** Admit `text` to session `s` closing at once and take its batch under a lease of 1 s. */
async function take(store: Store, text: string, at: number): Promise<LeasedBatch> {
  await store.admit([item(text, { at, closeNow: true })], at);
  const [batch] = await store.claimDue(at, 1000, 10);
  if (!batch) throw new Error(`nothing due at ${at}`);
  return batch;
}

const texts = (batch: LeasedBatch | undefined) => batch?.parts.map((part) => part.event.text);

/** Budgets (§12 of the contract): sliding windows counted in the store, and batches deferred over them. */
export function describeBudgets(h: StoreHarness): void {
  describe('budgets', () => {
    it('allows limit spends in a window, then refuses until the oldest leaves it', async () => {
      const store = await h.fresh();
      expect(await store.spendBudgets([budget('a', 2)], 0)).toEqual({ ok: true });
      expect(await store.spendBudgets([budget('a', 2)], 10)).toEqual({ ok: true });
      expect(await store.spendBudgets([budget('a', 2)], 20)).toEqual({
        ok: false,
        exceeded: [{ key: 'a', retryAt: 1000 }],
      });
    });

    it('slides: a spend counts for windowMs after it was made, and a refused spend counts for nothing', async () => {
      const store = await h.fresh();
      await store.spendBudgets([budget('a', 2)], 0);
      await store.spendBudgets([budget('a', 2)], 500);
      expect(await store.spendBudgets([budget('a', 2)], 999)).toMatchObject({ exceeded: [{ retryAt: 1000 }] });
      expect(await store.spendBudgets([budget('a', 2)], 1000)).toEqual({ ok: true });
      expect(await store.spendBudgets([budget('a', 2)], 1001)).toMatchObject({ exceeded: [{ retryAt: 1500 }] });
      expect(await store.spendBudgets([budget('a', 2)], 1500)).toEqual({ ok: true });
    });

    it('spends all or none: one budget full leaves the others unspent', async () => {
      const store = await h.fresh();
      await store.spendBudgets([budget('full', 1)], 0);
      expect(await store.spendBudgets([budget('room', 1), budget('full', 1)], 10)).toEqual({
        ok: false,
        exceeded: [{ key: 'full', retryAt: 1000 }],
      });
      expect(await store.spendBudgets([budget('room', 1)], 20)).toEqual({ ok: true });
      expect(await store.spendBudgets([budget('room', 1), budget('other', 5)], 30)).toEqual({
        ok: false,
        exceeded: [{ key: 'room', retryAt: 1020 }],
      });
      expect(await store.spendBudgets([budget('other', 1)], 40)).toEqual({ ok: true });
    });

    it('counts every spend made in the same ms', async () => {
      const store = await h.fresh();
      for (let n = 0; n < 3; n++) expect(await store.spendBudgets([budget('a', 3)], 5)).toEqual({ ok: true });
      expect(await store.spendBudgets([budget('a', 3)], 5)).toEqual({
        ok: false,
        exceeded: [{ key: 'a', retryAt: 1005 }],
      });
      expect(await store.spendBudgets([budget('a', 3)], 1005)).toEqual({ ok: true });
    });

    it('defers nothing for a stale fence: the batch stays where it was', async () => {
      const store = await h.fresh();
      const batch = await take(store, 'a', 0);
      expect(await store.deferBatch({ ...batch, fence: batch.fence + 1000 }, deferKey, 5000, 0)).toBe(false);
      expect(await store.openBuffers()).toBe(1);
      expect(await store.commit(batch, draft('o1'), 10)).toBeDefined();
      expect(await store.openBuffers()).toBe(0);
      expect(await store.claimDue(10_000, 1000, 10)).toEqual([]);
    });

    it('merges deferred batches into one claimed at the latest due time, all parts in order', async () => {
      const store = await h.fresh();
      const first = await take(store, 'a', 0);
      expect(await store.deferBatch(first, deferKey, 5000, 0)).toBe(true);
      // another buffer of the session may be taken meanwhile: the deferral released it
      const second = await take(store, 'b', 100);
      expect(await store.deferBatch(second, deferKey, 3000, 100)).toBe(true);
      // each batch of one message closed by a command: none may cut the merged batch
      const third = await take(store, 'c', 200);
      expect(await store.deferBatch(third, deferKey, 4000, 200)).toBe(true);
      expect(await store.openBuffers()).toBe(1);
      expect(await store.nextDeadline()).toBe(5000);
      expect(await store.claimDue(4999, 1000, 10)).toEqual([]);
      const [merged, ...more] = await store.claimDue(5000, 1000, 10);
      expect(more).toEqual([]);
      expect(merged).toMatchObject({ debounceKey: deferKey, sessionKey: 's', reason: 'budget' });
      expect(texts(merged)).toEqual(['a', 'b', 'c']);
      expect(merged?.parts.map((part) => part.id)).toEqual([first, second, third].map((b) => b.parts[0]?.id));
      expect(await store.commit(merged as LeasedBatch, draft('o1'), 5000)).toBeDefined();
      expect(await store.openBuffers()).toBe(0);
    });

    it('takes every deferred part in one batch, whatever maxMessages the buffer they left had', async () => {
      const store = await h.fresh();
      const small = { ...rule, maxMessages: 1 };
      for (const [n, text] of ['a', 'b', 'c'].entries()) {
        await store.admit([item(text, { at: n * 10, rule: small })], n * 10);
        const [batch] = await store.claimDue(n * 10, 1000, 10);
        expect(await store.deferBatch(batch as LeasedBatch, deferKey, 2000, n * 10)).toBe(true);
      }
      expect((await store.claimDue(2000, 1000, 10)).map(texts)).toEqual([['a', 'b', 'c']]);
    });

    it('keeps the later parts of the buffer a batch left, due by their own deadline, the session released', async () => {
      const store = await h.fresh();
      await store.admit([item('a', { at: 0 })], 0);
      const [batch] = await store.claimDue(1000, 1000, 10);
      await store.admit([item('b', { at: 1100 })], 1100);
      expect(await store.deferBatch(batch as LeasedBatch, deferKey, 10_000, 1200)).toBe(true);
      expect(await store.openBuffers()).toBe(2);
      expect(await store.nextDeadline()).toBe(2100);
      const [rest, ...more] = await store.claimDue(2100, 1000, 10);
      expect(more).toEqual([]);
      expect(rest).toMatchObject({ debounceKey: 's' });
      expect(texts(rest)).toEqual(['b']);
      await store.commit(rest as LeasedBatch, draft('o1'), 2100);
      expect((await store.claimDue(10_000, 1000, 10)).map(texts)).toEqual([['a']]);
    });

    it('defers a batch taken from its own deferred buffer again, to the later due time', async () => {
      const store = await h.fresh();
      expect(await store.deferBatch(await take(store, 'a', 0), deferKey, 1000, 0)).toBe(true);
      const [again] = await store.claimDue(1000, 1000, 10);
      expect(texts(again)).toEqual(['a']);
      // the session's buffer is leased: another batch of it is not due until that ends
      await store.admit([item('b', { at: 1000, closeNow: true, debounceKey: 'other' })], 1000);
      expect(await store.deferBatch(again as LeasedBatch, deferKey, 3000, 1100)).toBe(true);
      const [b] = await store.claimDue(1100, 1000, 10);
      expect(await store.deferBatch(b as LeasedBatch, deferKey, 2000, 1200)).toBe(true);
      expect(await store.nextDeadline()).toBe(3000);
      expect((await store.claimDue(3000, 1000, 10)).map(texts)).toEqual([['a', 'b']]);
    });
  });
}

/** What a durable store keeps of deferred batches across a restart. */
export function describeBudgetRestart(h: StoreHarness): void {
  describe('budgets after a restart', () => {
    it('keeps deferred parts and their due time', async () => {
      const store = await h.fresh();
      expect(await store.deferBatch(await take(store, 'a', 0), deferKey, 5000, 0)).toBe(true);
      expect(await store.deferBatch(await take(store, 'b', 10), deferKey, 4000, 10)).toBe(true);
      const again = await h.restart(store);
      expect(await again.openBuffers()).toBe(1);
      expect(await again.nextDeadline()).toBe(5000);
      expect(await again.claimDue(4999, 1000, 10)).toEqual([]);
      const [merged] = await again.claimDue(5000, 1000, 10);
      expect(merged).toMatchObject({ debounceKey: deferKey, sessionKey: 's' });
      expect(texts(merged)).toEqual(['a', 'b']);
    });
  });
}
