import { describe, expect, it } from 'vitest';
import { partId } from '../../src/store/part-id.js';

describe('partId', () => {
  it('gives increasing decimal integers, even past 1024 ids in one millisecond and when the clock steps back', () => {
    const now = Date.UTC(2040, 0, 1);
    const ids = [
      ...Array.from({ length: 5000 }, () => partId(now)),
      partId(now - 1000),
      partId(now + 1),
    ].map(Number);
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1] as number);
    expect(Number.isSafeInteger(ids[ids.length - 1])).toBe(true);
  });
});
