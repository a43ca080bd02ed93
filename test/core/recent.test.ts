import { describe, expect, it } from 'vitest';
import { RecentMap } from '../../src/core/recent.js';

describe('RecentMap', () => {
  it('keeps the newest max keys, letting go of the oldest first', () => {
    const map = new RecentMap<string, number>(3);
    for (const [i, key] of ['a', 'b', 'c', 'd', 'e'].entries()) map.set(key, i);
    expect(map.size).toBe(3);
    expect(['a', 'b', 'c', 'd', 'e'].map((key) => map.get(key))).toEqual([undefined, undefined, 2, 3, 4]);
  });

  it('updates a key set again in its place: it goes when its first setting would have', () => {
    const map = new RecentMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 10);
    expect(map.get('a')).toBe(10);
    expect(map.size).toBe(2);
    map.set('c', 3);
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([undefined, 2, 3]);
  });

  it('goes round its ring many times and keeps the bound', () => {
    const map = new RecentMap<number, number>(100);
    for (let i = 0; i < 10_000; i++) map.set(i, i);
    expect(map.size).toBe(100);
    expect(map.get(9_899)).toBeUndefined();
    expect(map.get(9_900)).toBe(9_900);
    expect(map.get(9_999)).toBe(9_999);
  });

  it('refuses a bound that is not a whole number of at least one', () => {
    expect(() => new RecentMap(0)).toThrow(RangeError);
    expect(() => new RecentMap(1.5)).toThrow(RangeError);
  });
});
