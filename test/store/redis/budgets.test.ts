import { describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { useRedis } from '../../support/redis.js';

/* Budgets on the server's clock (the contract runs them on the caller's), and their keys. */

const redis = useRedis();

/** The Redis server's time in ms, as a script's TIME reads it. */
const serverNow = async (): Promise<number> => {
  const [seconds, micros] = (await redis.admin.time()) as [number | string, number | string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
};

describe('Redis store budgets', () => {
  it("counts windows by the server's clock unless the store runs on its caller's", async () => {
    const store = await RedisStore.open(redis.url, { keyPrefix: 'budgets-server', commandTimeoutMs: 3000 });
    const budget = { key: 'channel:qq', limit: 1, windowMs: 60_000 };
    // the caller's now is ignored: a spend at 0 would have left a minute-long window long ago
    const before = await serverNow();
    expect(await store.spendBudgets([budget], 0)).toEqual({ ok: true });
    const after = await serverNow();
    const answer = await store.spendBudgets([budget], 0);
    expect(answer.ok).toBe(false);
    // the first spend's time on the server's clock, plus the window
    const { retryAt } = (answer as { exceeded: Array<{ retryAt: number }> }).exceeded[0]!;
    expect(retryAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(retryAt).toBeLessThanOrEqual(after + 60_000);
    await store.close();
  });

  it("keeps every budget under the store's hash tag, expiring with its window", async () => {
    const store = await RedisStore.open(redis.url, { keyPrefix: 'budgets-keys', commandTimeoutMs: 3000 });
    await store.spendBudgets([{ key: 'sender:qq:42', limit: 5, windowMs: 60_000 }], 0);
    expect(await redis.admin.keys('{budgets-keys}:bud:*')).toEqual(['{budgets-keys}:bud:sender:qq:42']);
    const ttl = await redis.admin.pttl('{budgets-keys}:bud:sender:qq:42');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    await store.close();
  });
});
