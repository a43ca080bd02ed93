import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isIntakeError } from '../../src/errors.js';
import { RedisStore } from '../../src/store/redis.js';
import type { AdmitItem } from '../../src/store/types.js';
import { type RedisServer, startRedis } from './redis-server.js';

let n = 0;
const item = (): AdmitItem => {
  const id = `m${++n}`;
  return {
    claims: [{ key: id, space: 'id:c', ttlMs: 60_000, maxKeys: 1000 }],
    part: {
      debounceKey: 'k', receivedAt: 1, event: {
        id, kind: 'message', channel: 'c', adapter: 'generic', namespace: 'c', conversation: { type: 'private', id: 's' },
        sessionKey: 's', sender: { id: 'u' }, segments: [], text: id, media: [], mentions: [], timestamp: 1, raw: undefined,
      },
    },
    rule: { windowMs: 1000, maxWaitMs: 5000, maxMessages: 10 },
    closeNow: false,
  };
};

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server.stop();
});

describe('Redis store when Redis fails', () => {
  it('runs its scripts again after SCRIPT FLUSH (NOSCRIPT falls back to EVAL)', async () => {
    const store = await RedisStore.open(server.url);
    expect(await store.admit([item()], 0)).toMatchObject([{ verdict: 'accepted' }]);
    const admin = new Redis(server.url);
    await admin.script('FLUSH');
    admin.disconnect();
    expect(await store.admit([item()], 0)).toMatchObject([{ verdict: 'accepted' }]);
    await store.close();
  });

  it('rejects admit and ping with store_unavailable while Redis is down, and admits again once it is back', async () => {
    const store = await RedisStore.open(server.url, { commandTimeoutMs: 1000 });
    expect(await store.admit([item()], 0)).toMatchObject([{ verdict: 'accepted' }]);
    await server.stop();
    const refused = await store.admit([item()], 0).catch((error: unknown) => error);
    expect(isIntakeError(refused) && refused.code).toBe('store_unavailable');
    await expect(store.ping()).rejects.toThrow(/Redis store: ping failed/);
    await server.restart(); // an empty server: no data, no scripts cached
    await expect.poll(() => store.ping().then(() => 'up', () => 'down'), { timeout: 10_000, interval: 50 }).toBe('up');
    expect(await store.admit([item()], 0)).toMatchObject([{ verdict: 'accepted' }]);
    await store.close();
  });

  it('rejects an admit that reaches the server but times out', async () => {
    // The pause (WRITE: every script, the admit included; CLIENT UNPAUSE still goes through)
    // outlasts the timeout by far, so a loaded machine cannot make the admit arrive after it, and
    // ends as soon as the test has its answer.
    const store = await RedisStore.open(server.url, { commandTimeoutMs: 300 });
    const admin = new Redis(server.url);
    await admin.call('CLIENT', 'PAUSE', '10000', 'WRITE');
    try {
      await expect(store.admit([item()], 0)).rejects.toThrow(/Command timed out/);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
      admin.disconnect();
    }
    await store.close();
  });

  it('fails an admit that fewer replicas than waitReplicas acknowledged', async () => {
    // WAIT gives up after half the command timeout: the other half is the margin for its answer.
    const store = await RedisStore.open(server.url, { waitReplicas: 1, commandTimeoutMs: 1000 });
    await expect(store.admit([item()], 0)).rejects.toThrow(/only 0 of 1 replicas/);
    await store.close();
  });

  it('warns at open when maxmemory-policy is not noeviction', async () => {
    const admin = new Redis(server.url);
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const warnings: string[] = [];
    const store = await RedisStore.open(server.url, { logger: { warn: (_obj, msg) => warnings.push(msg) } });
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    admin.disconnect();
    expect(warnings.join('\n')).toMatch(/maxmemory-policy noeviction/);
    await store.close();
  });

  it('fails to open with store_unavailable when nothing listens', async () => {
    const error = await RedisStore.open('redis://127.0.0.1:1', { commandTimeoutMs: 100 }).catch((e: unknown) => e);
    expect(isIntakeError(error) && error.code).toBe('store_unavailable');
  });
});
