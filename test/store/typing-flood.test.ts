import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/local/memory.js';
import { item, rule } from '../../src/testing/store/fixtures.js';

describe('a flood of typing signals for one sender', () => {
  it('never holds the buffer past maxWait from its first part, and moves no other buffer', async () => {
    const store = new MemoryStore();
    await store.admit([item('1', { at: 0 })], 0);
    await store.admit([item('other', { at: 0, sessionKey: 't' })], 0);
    const deadlines = new Set<number>();
    // 10,000 signals a second for 6 s, past the 5 s maxWait.
    for (let i = 0; i < 60_000; i++) {
      const now = i / 10;
      const moved = await store.holdForTyping('s', 's', now + 3000, now);
      if (moved !== undefined) deadlines.add(moved);
      expect(await store.holdForTyping('nobody', 'nobody', now + 3000, now)).toBeUndefined();
    }
    expect(Math.max(...deadlines)).toBe(rule.maxWaitMs);
    expect(await store.nextDeadline()).toBe(1000);
    expect((await store.claimDue(rule.maxWaitMs - 1, 1000, 10)).map((batch) => batch.debounceKey)).toEqual(['t']);
    expect((await store.claimDue(rule.maxWaitMs, 1000, 10)).map((batch) => batch.debounceKey)).toEqual(['s']);
    expect(await store.holdForTyping('s', 's', 9000, 6000)).toBeUndefined();
  });
});
