import { afterAll, describe, expect, it } from 'vitest';
import type { AdmitItem } from '../../../src/core/ports/index.js';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { useRedis } from '../../support/redis.js';

/*
 * Instances whose clocks disagree with the server's. Admission stamps deadlines with Redis's
 * clock; the flush must take buffers and keep leases by that clock too, or an instance running
 * ahead flushes every buffer as soon as it arrives (issue: a 1 s skew turned 30 fragments into
 * 30 outputs, +45 s flushed every message alone).
 */

const redis = useRedis();
const stores: RedisStore[] = [];
afterAll(async () => {
  for (const store of stores) await store.close();
});

const open = async (): Promise<RedisStore> => {
  const store = await RedisStore.open(redis.url, { keyPrefix: 'skew', commandTimeoutMs: 3000 });
  stores.push(store);
  return store;
};

const fragment = (id: string, windowMs: number, session = 'alice'): AdmitItem => ({
  claims: [],
  closeNow: false,
  rule: { windowMs, maxWaitMs: 60_000, maxMessages: 50 },
  part: {
    debounceKey: session,
    receivedAt: 0,
    event: {
      id,
      kind: 'message',
      channel: 'c',
      adapter: 'generic',
      namespace: 'c',
      conversation: { type: 'private', id: session },
      sessionKey: session,
      sender: { id: 'alice' },
      segments: [],
      text: id,
      media: [],
      mentions: [],
      timestamp: 1,
      raw: undefined,
    },
  },
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Redis store with instance clocks off the server', () => {
  it('does not take a buffer before its window ends by the server clock, however far ahead the instance clock runs', async () => {
    const ahead = await open();
    await ahead.admit([fragment('1', 60_000)], Date.now() + 45_000);
    await ahead.admit([fragment('2', 60_000)], Date.now() + 45_000);
    // 45 s and then 61 s ahead: the buffer's window (a minute by the server's clock) is still open.
    expect(await ahead.claimDue(Date.now() + 45_000, 30_000, 10)).toEqual([]);
    expect(await ahead.claimDue(Date.now() + 61_000, 30_000, 10)).toEqual([]);
  });

  it('takes the buffer once the server clock passes its deadline, even from an instance whose clock runs behind', async () => {
    const store = await open();
    await store.admit([fragment('a', 150, 'bob'), fragment('b', 150, 'bob')], 0);
    await sleep(300);
    const [batch] = await store.claimDue(Date.now() - 45_000, 30_000, 10);
    expect(batch?.parts.map((p) => p.event.id)).toEqual(['a', 'b']);
    // a renewal from the lagging clock keeps the lease 30 s past the server's now, not 15 s before it
    expect(await store.renewLease(batch!, Date.now() - 45_000, 30_000)).toBe(true);
    const other = await open();
    expect(await other.claimDue(Date.now(), 30_000, 10)).toEqual([]);
    expect(
      await store.commit(
        batch!,
        {
          id: 'out-1',
          type: 'chat.processedMessage',
          sessionKey: 'bob',
          channel: 'c',
          createdAt: 1,
          body: '{}',
          state: 'none',
        },
        Date.now(),
      ),
    ).toBeDefined();
  });
});
