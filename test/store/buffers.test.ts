import { describe, expect, it } from 'vitest';
import { Buffers, type PartMeta } from '../../src/store/buffers.js';

const rule = { windowMs: 100, maxWaitMs: 1000, maxMessages: 10 };
const part = (id: string, receivedAt: number): PartMeta => ({ id, receivedAt, unit: id, closes: false });

describe('Buffers.commit', () => {
  it('drops the committed leading parts and re-arms from the rest', () => {
    const buffers = new Buffers();
    for (const [i, id] of ['a', 'b', 'c'].entries()) buffers.append('k', 's', rule, part(id, i * 10), i * 10);
    let fence = 0;
    const [taken] = buffers.claimDue(1_000, 30_000, 1, () => ++fence);
    expect(taken?.partIds).toEqual(['a', 'b', 'c']);
    // A part arrives while the batch flushes: it stays, and the buffer is due again from it.
    buffers.append('k', 's', rule, part('d', 1_050), 1_050);
    const buffer = buffers.leased('k', fence)!;
    expect(buffers.commit(buffer, taken!.partIds, 1_060)).toBe(true);
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
