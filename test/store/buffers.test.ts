import { describe, expect, it } from 'vitest';
import { Buffers, type PartMeta } from '../../src/store/local/buffers.js';

const rule = { windowMs: 100, maxWaitMs: 1000, maxMessages: 10 };
const part = (id: string, receivedAt: number): PartMeta => ({
  id,
  receivedAt,
  unit: id,
  closes: false,
  body: undefined,
});
const idsOf = (taken: { parts: PartMeta[] } | undefined): string[] => (taken?.parts ?? []).map((p) => p.id);

describe('Buffers.commit', () => {
  it('drops the committed leading parts and re-arms from the rest', () => {
    const buffers = new Buffers();
    for (const [i, id] of ['a', 'b', 'c'].entries()) buffers.append('k', 's', rule, part(id, i * 10), i * 10);
    let fence = 0;
    const [taken] = buffers.claimDue(1_000, 30_000, 1, () => ++fence);
    expect(idsOf(taken)).toEqual(['a', 'b', 'c']);
    // A part arrives while the batch flushes: it stays, and the buffer is due again from it.
    buffers.append('k', 's', rule, part('d', 1_050), 1_050);
    const buffer = buffers.leased('k', fence)!;
    expect(buffers.commit(buffer, idsOf(taken), 1_060)).toBe(true);
    expect(buffer.parts.map((p) => p.id)).toEqual(['d']);
    expect(buffer.deadline).toBe(1_150);
  });

  it('drops parts named out of order too, and the buffer once none remain', () => {
    const buffers = new Buffers();
    for (const id of ['a', 'b', 'c']) buffers.append('k', 's', rule, part(id, 0), 0);
    const buffer = buffers.get('k')!;
    expect(buffers.commit(buffer, ['b'], 5)).toBe(true);
    expect(buffer.parts.map((p) => p.id)).toEqual(['a', 'c']);
    expect(buffers.commit(buffer, ['c', 'a'], 5)).toBe(false);
    expect(buffers.get('k')).toBeUndefined();
    expect(buffers.size).toBe(0);
  });
});

describe('Buffers leases', () => {
  const open = (buffers: Buffers, key: string, at: number) =>
    buffers.append(key, key, rule, part(`${key}@${at}`, at), at);

  it('reports a lease expiry as the next due time and takes the buffer over at it', () => {
    const buffers = new Buffers();
    open(buffers, 'k', 0);
    let fence = 0;
    expect(buffers.claimDue(100, 1_000, 10, () => ++fence).map((t) => t.reason)).toEqual(['window']);
    expect(buffers.nextDue()).toBe(1_100);
    expect(buffers.claimDue(1_099, 1_000, 10, () => ++fence)).toEqual([]);
    const [takeover] = buffers.claimDue(1_100, 1_000, 10, () => ++fence);
    expect(takeover?.reason).toBe('takeover');
    expect(buffers.leased('k', 1)).toBeUndefined();
    expect(buffers.leased('k', 2)?.lease?.until).toBe(2_100);
    expect(buffers.nextDue()).toBe(2_100);
  });

  it('keeps a renewed lease, even one whose expiry already came up', () => {
    const buffers = new Buffers();
    open(buffers, 'k', 0);
    open(buffers, 'other', 5_000);
    let fence = 0;
    buffers.claimDue(100, 1_000, 1, () => ++fence);
    const buffer = buffers.leased('k', 1)!;
    buffers.renew(buffer, 1_600);
    expect(buffers.nextDue()).toBe(1_600);
    expect(buffers.claimDue(1_500, 1_000, 10, () => ++fence)).toEqual([]);
    // Expired: a claim that takes nothing else (limit 0 here: the other buffer is not due) moves it to the heap.
    expect(buffers.claimDue(1_700, 1_000, 0, () => ++fence)).toEqual([]);
    buffers.renew(buffer, 3_000); // the owner renews in time after all
    expect(buffers.claimDue(2_000, 1_000, 10, () => ++fence)).toEqual([]);
    expect(buffers.nextDue()).toBe(3_000);
    expect(buffers.commit(buffer, [`k@0`], 2_500)).toBe(false);
    expect(buffers.nextDue()).toBe(5_100);
  });

  it('ends a lease at commit without leaving its expiry behind', () => {
    const buffers = new Buffers();
    let fence = 0;
    for (let i = 0; i < 5; i++) {
      open(buffers, `k${i}`, i);
      const [taken] = buffers.claimDue(i + 100, 30_000, 10, () => ++fence);
      expect(buffers.commit(buffers.leased(`k${i}`, fence)!, idsOf(taken), i + 100)).toBe(false);
      // Nothing is open or leased: nothing is due, not even at the old lease's expiry.
      expect(buffers.nextDue()).toBeUndefined();
    }
  });

  // A lease that expired moves its buffer to the heap, due at the expiry; the owner may still commit.
  const committedAfterExpiry = (buffers: Buffers): void => {
    open(buffers, 'k', 0);
    let fence = 0;
    const [taken] = buffers.claimDue(100, 1_000, 10, () => ++fence);
    // A claim that takes nothing else (limit 0) moves the expired lease to the heap.
    expect(buffers.claimDue(1_200, 1_000, 0, () => ++fence)).toEqual([]);
    expect(buffers.commit(buffers.leased('k', 1)!, idsOf(taken), 1_250)).toBe(false);
  };

  it('forgets a buffer committed whole after its lease expired', () => {
    const buffers = new Buffers();
    committedAfterExpiry(buffers);
    expect(buffers.nextDue()).toBeUndefined();
    expect(buffers.claimDue(5_000, 1_000, 10, () => 1_000)).toEqual([]);
  });

  it('does not take a key reopened after such a commit at the old expiry', () => {
    const buffers = new Buffers();
    committedAfterExpiry(buffers);
    // Reopened at once: the old expiry entry (1,100) is still in the heap, and must not count for the new buffer.
    open(buffers, 'k', 6_000);
    expect(buffers.nextDue()).toBe(6_100);
    expect(buffers.claimDue(6_099, 1_000, 10, () => 1_000)).toEqual([]);
    const again = buffers.claimDue(6_100, 1_000, 10, () => 1_001);
    expect(again.map((t) => [t.reason, idsOf(t)])).toEqual([['window', ['k@6000']]]);
  });
});
