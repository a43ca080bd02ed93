import { describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { turnRule } from '../../../src/testing/store/turns.js';
import { useRedis } from '../../support/redis.js';
import { closingItem, doneDraft } from './fixtures.js';

/*
 * An emitted output's message ids (the revision ledger's shared values) are written by the
 * output's own commit script, ahead of its record, instead of one SET call each before it.
 */

const redis = useRedis();
const open = (keyPrefix: string) =>
  RedisStore.open(redis.url, { keyPrefix, commandTimeoutMs: 3000, clock: 'caller' as const });

/** Commands Redis ran of one name. */
const calls = async (name: string) =>
  Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(String(await redis.admin.info('commandstats')))?.[1] ?? 0);

describe('Redis store: shared values written with a commit', () => {
  it("writes an output's values in its commit call, none before it, each for its time to live", async () => {
    const store = await open('vwc');
    await store.admit([closingItem('a'), closingItem('b')], 0);
    const batches = await store.claimDue(1, 5000, 10);
    store.putWithCommit(
      'a',
      [
        ['emitted:s\u0000m1', 'a\u0000c'],
        ['emitted:s\u0000m2', 'a\u0000c'],
      ],
      60_000,
    );
    store.putWithCommit('b', [['emitted:t\u0000m3', 'b\u0000c']], 60_000);
    expect(await redis.admin.exists('{vwc}:val:emitted:s\u0000m1')).toBe(0);
    await redis.admin.config('RESETSTAT');
    const records = await Promise.all(batches.map((batch) => store.commit(batch, doneDraft(batch.debounceKey), 2)));
    expect(records.map((record) => record?.id)).toEqual(['a', 'b']);
    // one script call (EVAL the first time the script is sent), the three SETs inside it
    expect([(await calls('evalsha')) + (await calls('eval')), await calls('set')]).toEqual([1, 3]);
    expect(await store.sharedGet('emitted:s\u0000m1', 0)).toBe('a\u0000c');
    expect(await store.sharedGet('emitted:s\u0000m2', 0)).toBe('a\u0000c');
    expect(await store.sharedGet('emitted:t\u0000m3', 0)).toBe('b\u0000c');
    const ttl = await redis.admin.pttl('{vwc}:val:emitted:s\u0000m1');
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    await store.close();
  });

  it('writes none for a commit whose fence went stale, and those of the owner that takes the batch over', async () => {
    const store = await open('vwc-stale');
    await store.admit([closingItem('a')], 0);
    const [stale] = await store.claimDue(1, 5000, 10);
    const [taken] = await store.claimDue(10_000, 5000, 10);
    store.putWithCommit('a', [['emitted:s\u0000m1', 'a']], 60_000);
    expect(await store.commit(stale!, doneDraft('a'), 10_001)).toBeUndefined();
    expect(await store.sharedGet('emitted:s\u0000m1', 0)).toBeUndefined();
    store.putWithCommit('a', [['emitted:s\u0000m1', 'a']], 60_000);
    expect((await store.commit(taken!, doneDraft('a'), 10_002))?.id).toBe('a');
    expect(await store.sharedGet('emitted:s\u0000m1', 0)).toBe('a');
    await store.close();
  });

  it('writes them ahead of an agent turn commit too', async () => {
    const store = await open('vwc-turn');
    await store.admit([closingItem('a')], 0);
    const [batch] = await store.claimDue(1, 5000, 10);
    store.putWithCommit('a', [['emitted:s\u0000m1', 'a']], 60_000);
    expect(await store.commitTurn(batch!, doneDraft('a'), 2, turnRule('collect'))).toMatchObject({ held: false });
    expect(await store.sharedGet('emitted:s\u0000m1', 0)).toBe('a');
    await store.close();
  });
});
