import { describe, expect, it } from 'vitest';
import { ClaimTable } from '../../src/store/claim-table.js';

describe('ClaimTable', () => {
  it('refuses a second claim of a key inside its TTL and admits it again after', () => {
    const table = new ClaimTable(1000, 100);
    expect(table.claim('a', 0)).toBe(true);
    expect(table.claim('a', 999)).toBe(false);
    expect(table.claim('a', 1000)).toBe(true);
    expect(table.claim('a', 1999)).toBe(false);
  });

  it('expires keys in insertion order without touching live ones', () => {
    const table = new ClaimTable(100, 100);
    table.claim('a', 0);
    table.claim('b', 50);
    expect(table.count).toBe(2);
    expect(table.has('a', 100)).toBe(false);
    expect(table.has('b', 100)).toBe(true);
    expect(table.count).toBe(1);
  });

  it('evicts the oldest key past the cap and counts it', () => {
    const table = new ClaimTable(10_000, 3);
    for (const key of ['a', 'b', 'c', 'd']) expect(table.claim(key, 1)).toBe(true);
    expect(table.evicted).toBe(1);
    expect(table.count).toBe(3);
    expect(table.claim('a', 2)).toBe(true);
    expect(table.claim('d', 2)).toBe(false);
  });

  it('keeps working across ring growth and wrap-around', () => {
    const table = new ClaimTable(10, 5000);
    for (let i = 0; i < 20_000; i++) {
      expect(table.claim(`k${i}`, i)).toBe(true);
      expect(table.claim(`k${i}`, i)).toBe(false);
    }
    expect(table.count).toBe(10);
    expect(table.evicted).toBe(0);
  });
});
