import { describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { item } from '../../../src/testing/store/fixtures.js';
import { useRedis } from '../../support/redis.js';

/* Typing holds on the server's clock (the contract runs them on the caller's), and the `due` score. */

const redis = useRedis();

/** The Redis server's time in ms, as a script's TIME reads it. */
const serverNow = async (): Promise<number> => {
  const [seconds, micros] = (await redis.admin.time()) as [number | string, number | string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
};

describe('Redis store typing holds', () => {
  it("holds for untilAt - now on the server's clock, moving the meta's deadline and the due score together", async () => {
    const store = await RedisStore.open(redis.url, { keyPrefix: 'typing-server', commandTimeoutMs: 3000 });
    const before = await serverNow();
    // the caller's clock is a day behind: only the length of the hold (3 s) is taken from it
    await store.admit(
      [item('1', { debounceKey: 'dk', rule: { windowMs: 1000, maxWaitMs: 60_000, maxMessages: 10 } })],
      0,
    );
    const deadline = await store.holdForTyping('dk', 's', 3000 - 86_400_000, -86_400_000);
    const after = await serverNow();
    expect(deadline).toBeGreaterThanOrEqual(before + 3000);
    expect(deadline).toBeLessThanOrEqual(after + 3000);
    expect(Number(await redis.admin.zscore('{typing-server}:due', 'dk'))).toBe(deadline);
    expect(await redis.admin.hmget('{typing-server}:bm:dk', 'deadline', 'reason')).toEqual([
      String(deadline),
      'window',
    ]);
    await store.close();
  });
});
