import { describe, expect, it } from 'vitest';
import type { AdmitItem, AdmitVerdict } from '../../src/core/ports/index.js';
import { AdmissionBatches } from '../../src/ingest/batch.js';

const item = (id: string) => ({ part: { event: { platformId: id } } }) as unknown as AdmitItem;
const accepted = (id: string): AdmitVerdict => ({ verdict: 'accepted', partId: id, deadline: 0 });
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A store that answers each item with its id, and fails the calls that hold `failing`. */
function fakeStore(failing?: string) {
  const calls: Array<{ ids: string[]; now: number }> = [];
  return {
    calls,
    async admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]> {
      const ids = items.map((one) => one.part.event.platformId as string);
      calls.push({ ids, now });
      if (failing !== undefined && ids.includes(failing)) throw new Error('the store is away');
      return ids.map(accepted);
    },
  };
}

describe('admission batches', () => {
  it('answers each delivery of one turn with its own verdicts, from one store call', async () => {
    const store = fakeStore();
    const batches = new AdmissionBatches(store);
    const answers = await Promise.all([
      batches.admit([item('a1'), item('a2')], 5),
      batches.admit([item('b1')], 5),
      batches.admit([], 5),
    ]);
    expect(answers).toEqual([[accepted('a1'), accepted('a2')], [accepted('b1')], []]);
    expect(store.calls).toEqual([{ ids: ['a1', 'a2', 'b1'], now: 5 }]);
  });

  it('steps deliveries stamped with different times apart, in arrival order', async () => {
    const store = fakeStore();
    const batches = new AdmissionBatches(store);
    await Promise.all([batches.admit([item('a')], 5), batches.admit([item('b')], 5), batches.admit([item('c')], 6)]);
    expect(store.calls).toEqual([
      { ids: ['a', 'b'], now: 5 },
      { ids: ['c'], now: 6 },
    ]);
  });

  it('fails only the deliveries of the call that failed', async () => {
    const store = fakeStore('bad');
    const batches = new AdmissionBatches(store);
    const first = Promise.allSettled([batches.admit([item('a')], 1), batches.admit([item('bad')], 1)]);
    await nextTurn();
    const second = batches.admit([item('c')], 1);
    expect((await first).map((answer) => answer.status)).toEqual(['rejected', 'rejected']);
    expect(await second).toEqual([accepted('c')]);
    expect(store.calls.map((call) => call.ids)).toEqual([['a', 'bad'], ['c']]);
  });

  it('sends a full batch at once, without waiting for the turn to end', async () => {
    const store = fakeStore();
    const batches = new AdmissionBatches(store);
    const big = Array.from({ length: 512 }, (_, n) => item(`m${n}`));
    const answer = batches.admit(big, 1);
    expect(store.calls).toHaveLength(1);
    expect(await answer).toHaveLength(512);
  });
});
