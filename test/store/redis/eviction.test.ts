import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { type RedisServer, startRedis } from '../redis-server.js';

/*
 * A maxmemory-policy changed to an evicting one while the service runs.
 */

let redis: RedisServer;
let admin: Redis;
const cleanups: Array<() => unknown> = [];
beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
});
afterAll(async () => {
  admin.disconnect();
  await redis.stop();
});
afterEach(async () => {
  await admin.config('SET', 'maxmemory-policy', 'noeviction');
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await admin.flushall();
});

async function open(): Promise<{ store: RedisStore; lines: string[] }> {
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
  const store = await RedisStore.open(redis.url, { keyPrefix: 'ev', commandTimeoutMs: 3000, logger });
  cleanups.push(() => store.close());
  return { store, lines };
}

describe('Redis eviction', () => {
  it('notices a maxmemory-policy changed to an evicting one after start, says so once as an error, and shows it in the health', async () => {
    const { store, lines } = await open();
    expect(await store.health()).toMatchObject({ rollbacks: 0 });
    expect((await store.health()).evictionPolicy).toBeUndefined();
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    expect(await store.health()).toMatchObject({ evictionPolicy: 'allkeys-lru', evictedKeys: 0 });
    await store.health();
    const said = lines.filter((line) => line.includes('maxmemory-policy'));
    expect(said).toHaveLength(1);
    expect(JSON.parse(said[0]!)).toMatchObject({ level: 50, policy: 'allkeys-lru' });
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    expect((await store.health()).evictionPolicy).toBeUndefined();
  });
});
