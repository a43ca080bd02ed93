import { describe, expect, it } from 'vitest';
import type { LeasedBatch, RevisionKeep } from '../../../src/core/ports/index.js';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { contextMessage } from '../../../src/testing/store/conversations.js';
import { item } from '../../../src/testing/store/fixtures.js';
import { useRedis } from '../../support/redis.js';

/*
 * A claim of due buffers reads each session's conversation in the same script call
 * (claim-due.lua), so the flush decides without a call of its own: what it brings must be what
 * a read without the context gives, and whether the session keeps context.
 */

const redis = useRedis();
const keep: RevisionKeep = { maxRevisions: 4, ttlMs: 60_000 };
const open = (keyPrefix: string) =>
  RedisStore.open(redis.url, { keyPrefix, commandTimeoutMs: 3000, clock: 'caller' as const });

/** Admit one message of `sessionKey` closing at once and lease it. */
async function take(store: RedisStore, text: string, at: number, sessionKey = 's'): Promise<LeasedBatch> {
  await store.admit([item(text, { sessionKey, at, closeNow: true })], at);
  const batch = (await store.claimDue(at, 1000, 10)).find((b) => b.sessionKey === sessionKey);
  if (!batch) throw new Error(`nothing due for ${sessionKey} at ${at}`);
  return batch;
}

describe('Redis store: the conversation a claim brings with each batch', () => {
  it('brings an empty conversation for a session with none, keeping no context', async () => {
    const store = await open('lc-empty');
    const batch = await take(store, 'a', 10);
    expect(batch.conversation).toStrictEqual({ state: { context: [], dropped: 0 }, keepsContext: false });
    await store.close();
  });

  it("brings the session's override alone, and none of another session's", async () => {
    const store = await open('lc-override');
    await store.setActivation('s', { group: 'always' }, 0);
    expect((await take(store, 'a', 10)).conversation).toStrictEqual({
      state: { context: [], dropped: 0, activation: { group: 'always' } },
      keepsContext: false,
    });
    expect((await take(store, 'b', 10, 't')).conversation).toStrictEqual({
      state: { context: [], dropped: 0 },
      keepsContext: false,
    });
    await store.close();
  });

  it('brings what a read without the context gives, and says the session keeps context until its time is up', async () => {
    const store = await open('lc-full');
    const first = await take(store, 'a', 10);
    expect(await store.keepContext(first, [contextMessage('a')], 10, { maxMessages: 5, ttlMs: 1000 })).toBe(true);
    await store.setActivation('s', { group: 'mention' }, 0);
    await store.revise('s', [], { kind: 'recall', messageId: 'x', at: 20 }, 20, keep);
    await store.holdTakeover('s', 20, { holdMs: 500, maxMs: 5000 }, 20);
    const batch = await take(store, 'b', 30);
    expect(batch.conversation).toStrictEqual({
      state: await store.conversation('s', 30, { context: false }),
      keepsContext: true,
    });
    expect(batch.conversation?.state).toMatchObject({
      activation: { group: 'mention' },
      revisions: [{ kind: 'recall', messageId: 'x', at: 20 }],
      takeover: { since: 20, until: 520 },
    });
    expect(await store.keepContext(batch, [contextMessage('b')], 30, { maxMessages: 5, ttlMs: 1000 })).toBe(true);
    // the context kept at 30 is forgotten at 1030
    expect((await take(store, 'c', 1030)).conversation?.keepsContext).toBe(false);
    await store.close();
  });
});
