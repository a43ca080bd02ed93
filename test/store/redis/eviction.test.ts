import { afterEach, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { recordingLogger, type LogRecord } from '../../support/logger.js';
import { useRedis } from '../../support/redis.js';
import { closingItem, doneDraft } from './fixtures.js';

/*
 * A maxmemory-policy changed to an evicting one while the service runs, and what an eviction
 * leaves: a buffer whose parts list went while its meta stayed.
 */

const redis = useRedis();
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  await redis.admin.config('SET', 'maxmemory-policy', 'noeviction');
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await redis.admin.flushall();
});

async function open(): Promise<{ store: RedisStore; lines: LogRecord[] }> {
  const { logger, lines } = recordingLogger('warn');
  const store = await RedisStore.open(redis.url, { keyPrefix: 'ev', commandTimeoutMs: 3000, logger });
  cleanups.push(() => store.close());
  return { store, lines };
}

describe('Redis eviction', () => {
  it('notices a maxmemory-policy changed to an evicting one after start, says so once as an error, and shows it in the health', async () => {
    const { store, lines } = await open();
    expect(await store.health()).toMatchObject({ rollbacks: 0 });
    expect((await store.health()).evictionPolicy).toBeUndefined();
    await redis.admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    expect(await store.health()).toMatchObject({ evictionPolicy: 'allkeys-lru', evictedKeys: 0 });
    await store.health();
    const said = lines.filter((line) => line.msg.includes('maxmemory-policy'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 50, policy: 'allkeys-lru' });
    await redis.admin.config('SET', 'maxmemory-policy', 'noeviction');
    expect((await store.health()).evictionPolicy).toBeUndefined();
  });

  it('drops a buffer whose parts were evicted instead of handing out a batch of no parts, logs it, and frees its session', async () => {
    const { store, lines } = await open();
    await store.admit([closingItem('s1')], 0);
    await redis.admin.del('{ev}:buf:s1'); // evicted: its meta and its place in `due` stay
    expect(await store.claimDue(Date.now() + 60_000, 5000, 10)).toEqual([]);
    expect(lines.some((line) => /lost its parts/.test(line.msg))).toBe(true);
    expect(await store.openBuffers()).toBe(0);
    // The session is free: its next message flushes as usual.
    await store.admit([closingItem('s1')], 0);
    const [batch] = await store.claimDue(Date.now() + 60_000, 5000, 10);
    expect(batch?.parts).toHaveLength(1);
    expect((await store.commit(batch!, doneDraft('o1'), 0))?.seq).toBe(1);
  });
});
