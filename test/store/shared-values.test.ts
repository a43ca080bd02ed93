import { describe, expect, it } from 'vitest';
import { MAX_SHARED_VALUES } from '../../src/store/local/local-store.js';
import { MemoryStore } from '../../src/store/local/memory.js';

describe('shared values on the memory store', () => {
  it('forgets expired values as new ones are written: a value per message our bots sent stays bounded', async () => {
    const store = new MemoryStore();
    // A busy bot's sent messages, each remembered for a minute, over a day.
    let now = 0;
    for (let i = 0; i < 20_000; i++) {
      now += 5_000;
      await store.sharedPut(`sent:qq:10001:${i}`, '1', 60_000, now);
    }
    expect(store['values'].size).toBeLessThanOrEqual(2 * 12 + 64);
    expect(await store.sharedGet('sent:qq:10001:19999', now)).toBe('1');
    expect(await store.sharedGet('sent:qq:10001:19988', now)).toBe('1');
    expect(await store.sharedGet('sent:qq:10001:19987', now)).toBeUndefined();
    await store.close();
  });

  it('keeps a long-lived value among many short ones', async () => {
    const store = new MemoryStore();
    await store.sharedPut('token:tg', 'abc', 7_200_000, 0);
    for (let i = 0; i < 1_000; i++) await store.sharedPut(`sent:qq:1:${i}`, '1', 1_000, i * 100);
    expect(await store.sharedGet('token:tg', 100_000)).toBe('abc');
    await store.close();
  });

  it('keeps at most MAX_SHARED_VALUES, the oldest written going first though they have not expired', async () => {
    const store = new MemoryStore();
    // The ids of emitted messages, each kept for hours, at a steady rate
    for (let i = 0; i < 2 * MAX_SHARED_VALUES; i++) await store.sharedPut(`emitted:${i}`, '1', 21_600_000, i);
    // The oldest go a sixteenth of the cap at a time, the newest fifteen sixteenths always kept.
    expect(store['values'].size).toBeLessThanOrEqual(MAX_SHARED_VALUES);
    expect(store['values'].size).toBeGreaterThanOrEqual(MAX_SHARED_VALUES - MAX_SHARED_VALUES / 16);
    const oldestKept = 2 * MAX_SHARED_VALUES - store['values'].size;
    expect(await store.sharedGet(`emitted:${oldestKept - 1}`, MAX_SHARED_VALUES)).toBeUndefined();
    expect(await store.sharedGet(`emitted:${oldestKept}`, MAX_SHARED_VALUES)).toBe('1');
    expect(await store.sharedGet(`emitted:${2 * MAX_SHARED_VALUES - 1}`, MAX_SHARED_VALUES)).toBe('1');
    await store.close();
  });
});
