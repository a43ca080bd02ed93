import { describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { useRedis } from '../../support/redis.js';
import { contextMessage } from '../../../src/testing/index.js';
import { closingItem, doneDraft } from './fixtures.js';

/* Commits asked for together go to Redis as one script call, each under its own fence. */

const redis = useRedis();

/** Script calls Redis ran (EVALSHA, or EVAL the first time a script is sent). */
const scriptCalls = async () => {
  const stats = String(await redis.admin.info('commandstats'));
  return ['evalsha', 'eval'].reduce(
    (sum, name) => sum + Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0),
    0,
  );
};

describe('Redis store commits', () => {
  it('sends the commits of one turn in one call, and refuses the one whose fence went stale', async () => {
    const store = await RedisStore.open(redis.url, { keyPrefix: 'commits', commandTimeoutMs: 3000, clock: 'caller' });
    await store.admit(['a', 'b', 'c'].map(closingItem), 0);
    const batches = await store.claimDue(1, 5000, 10);
    expect(batches).toHaveLength(3);
    // a's and b's leases are renewed; c's runs out and another owner takes it over: its first fence is stale
    for (const batch of batches.filter((b) => b.debounceKey !== 'c'))
      expect(await store.renewLease(batch, 9000, 5000)).toBe(true);
    const stale = batches.find((b) => b.debounceKey === 'c')!;
    const [taken] = await store.claimDue(10_000, 5000, 10);
    expect(taken?.debounceKey).toBe('c');
    await redis.admin.config('RESETSTAT');
    const records = await Promise.all(batches.map((batch) => store.commit(batch, doneDraft(batch.debounceKey), 2)));
    expect(await scriptCalls()).toBe(2); // one commit-many call, and the outbox look-up of the refused one
    expect(records.map((r) => r?.id)).toEqual(['a', 'b', undefined]);
    expect(records[0]!.seq + 1).toBe(records[1]!.seq);
    // the owner that took c over commits it
    expect((await store.commit(taken!, doneDraft('c'), 10_001))?.id).toBe('c');
    expect(stale.fence).not.toBe(taken!.fence);
    await store.close();
  });

  it("clears each commit's own session's context up to its contextUpTo, in the batched call", async () => {
    const store = await RedisStore.open(redis.url, {
      keyPrefix: 'commits-ctx',
      commandTimeoutMs: 3000,
      clock: 'caller',
    });
    const keep = { maxMessages: 5, ttlMs: 60_000 };
    await store.admit(['a', 'b', 'c'].map(closingItem), 0);
    for (const batch of await store.claimDue(1, 5000, 10))
      expect(await store.keepContext(batch, [contextMessage(`${batch.sessionKey}1`)], 1, keep)).toBe(true);
    const upTo = async (session: string) => (await store.conversation(session, 2)).context.at(-1)!.seq;
    const [a, b] = [await upTo('a'), await upTo('b')];
    await store.admit(['a', 'b', 'c'].map(closingItem), 3);
    const batches = await store.claimDue(4, 5000, 10);
    await redis.admin.config('RESETSTAT');
    const contextUpTo: Record<string, number | undefined> = { a, b: b - 1, c: undefined };
    const records = await Promise.all(
      batches.map((batch) =>
        store.commit(batch, { ...doneDraft(`${batch.sessionKey}-2`), contextUpTo: contextUpTo[batch.sessionKey] }, 5),
      ),
    );
    expect(await scriptCalls()).toBe(1);
    expect(records.every((record) => record !== undefined && !('contextUpTo' in record))).toBe(true);
    // a's context went with its output; b's output read none of it (up to before it); c's carried none
    expect((await store.conversation('a', 6)).context).toEqual([]);
    expect((await store.conversation('b', 6)).context.map((entry) => entry.message.messageId)).toEqual(['b1']);
    expect((await store.conversation('c', 6)).context.map((entry) => entry.message.messageId)).toEqual(['c1']);
    await store.close();
  });
});
