import { describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { useRedis } from '../../support/redis.js';
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
});
