import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isIntakeError } from '../../src/core/errors.js';
import { RedisStore } from '../../src/store/redis/redis.js';
import { scripts } from '../../src/store/redis/scripts.js';

const { aiClaimDue: CLAIM_DUE_LUA, aiUnclaim: UNCLAIM_LUA } = scripts();
import type { AdmitItem } from '../../src/core/ports/index.js';
import { draft, item as fixture } from '../../src/testing/index.js';
import { useRedis } from '../support/redis.js';

let n = 0;
const item = (): AdmitItem => {
  const id = `m${++n}`;
  return {
    claims: [{ key: id, space: 'id:c', ttlMs: 60_000, maxKeys: 1000 }],
    part: {
      debounceKey: 'k',
      receivedAt: 1,
      event: {
        id,
        kind: 'message',
        channel: 'c',
        adapter: 'generic',
        namespace: 'c',
        conversation: { type: 'private', id: 's' },
        sessionKey: 's',
        sender: { id: 'u' },
        segments: [],
        text: id,
        media: [],
        mentions: [],
        timestamp: 1,
        raw: undefined,
      },
    },
    rule: { windowMs: 1000, maxWaitMs: 5000, maxMessages: 10 },
    closeNow: false,
  };
};

const server = useRedis();

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
    await expect
      .poll(
        () =>
          store.ping().then(
            () => 'up',
            () => 'down',
          ),
        { timeout: 10_000, interval: 50 },
      )
      .toBe('up');
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

  it('gives back, at the next claim, the buffers of a claim whose answer was lost, and refuses that claim if it is sent again', async () => {
    // The background connection gives up after 5 s; the pause outlasts that, so the claim runs
    // only after its caller saw it fail, and its answer goes nowhere.
    const prefix = '{lost-claim}:';
    const store = await RedisStore.open(server.url, {
      commandTimeoutMs: 300,
      keyPrefix: 'lost-claim',
      clock: 'caller',
    });
    const admin = new Redis(server.url);
    try {
      await store.admit([item()], 0);
      const now = Date.now() + 60_000; // due by then
      await admin.call('CLIENT', 'PAUSE', '20000', 'WRITE');
      let lost: unknown;
      try {
        lost = await store.claimDue(now, 30_000, 10).catch((error: unknown) => error);
      } finally {
        await admin.call('CLIENT', 'UNPAUSE');
      }
      expect(String(lost)).toMatch(/Command timed out/);
      // Redis ran it once unpaused: the buffer is leased, its lease 30 s away.
      await expect.poll(() => admin.hget(`${prefix}bm:k`, 'fence'), { timeout: 5000, interval: 20 }).not.toBeNull();
      const [token] = (await admin.hget(`${prefix}bm:k`, 'claim'))?.split(' ') ?? []; // `<token> <claimedAt> <reason>`
      // The next claim gives it back first and takes it, well before the lease ends.
      const [batch, ...more] = await store.claimDue(now, 30_000, 10);
      expect(more).toEqual([]);
      expect(batch).toMatchObject({ debounceKey: 'k', sessionKey: 's', reason: 'window' });
      // The lost claim, sent again by the client after its undo (a resend on reconnect), takes nothing.
      await store.release(batch as NonNullable<typeof batch>, now);
      expect(await admin.eval(CLAIM_DUE_LUA, 1, prefix, String(now + 1), '30000', '10', token as string)).toEqual([]);
      expect(await store.claimDue(now + 1, 30_000, 10)).toHaveLength(1);
    } finally {
      admin.disconnect();
      await store.close();
    }
  });

  describe('claim tokens (the scripts run directly, as a client whose answers were lost)', () => {
    const prefix = '{tokens}:';
    let store: RedisStore;
    let admin: Redis;
    const claim = (now: number, token: string) =>
      admin.eval(CLAIM_DUE_LUA, 1, prefix, String(now), '30000', '10', token) as Promise<
        Array<[string, string, number, number, string, string[]]>
      >;
    const undo = (token: string) => admin.eval(UNCLAIM_LUA, 1, prefix, token, '60000');
    const texts = (batches: Array<{ parts: Array<{ event: { text: string } }> }>) =>
      batches.map((b) => b.parts.map((p) => p.event.text));
    beforeEach(async () => {
      admin = new Redis(server.url);
      await admin.eval(`for _, k in ipairs(redis.call('KEYS', '{tokens}:*')) do redis.call('DEL', k) end`, 0);
      store = await RedisStore.open(server.url, { keyPrefix: 'tokens', clock: 'caller' });
    });
    afterEach(async () => {
      admin.disconnect();
      await store.close();
    });

    it('leaves alone what a lost claim leased once another claim took it over', async () => {
      await store.admit([fixture('a1')], 0);
      const now = Date.now() + 60_000; // due by then
      expect(await claim(now, 'lost')).toHaveLength(1);
      // Its lease ran out and another claim took the buffer over: the undo must not touch it.
      const [[, , fence, , reason] = []] = await claim(now + 31_000, 'other');
      expect(reason).toBe('takeover');
      expect(await undo('lost')).toBe(0);
      expect(Number(await admin.hget(`${prefix}bm:s`, 'fence'))).toBe(fence);
      expect(await admin.get(`${prefix}lock:s`)).toMatch(new RegExp(`^${fence} `));
      // Undone while still its own: the buffer is due again, its session held for it alone.
      expect(await undo('other')).toBe(1);
      expect(await admin.hget(`${prefix}bm:s`, 'fence')).toBeNull();
      expect(await store.claimDue(now + 31_000, 30_000, 10)).toHaveLength(1);
    });

    it('answers a claim sent again with what it took the first time, and takes nothing new', async () => {
      await store.admit([fixture('a1', { sessionKey: 'a' })], 0);
      const now = Date.now() + 60_000;
      const first = await claim(now, 'twice');
      await store.admit([fixture('b1', { sessionKey: 'b', closeNow: true })], 0);
      const again = await claim(now + 1, 'twice');
      expect(again).toEqual(first);
      expect(texts(await store.claimDue(now + 1, 30_000, 10))).toEqual([['b1']]);
    });

    it("keeps a failed flush ahead of its session's later batches when the claim that retook it is undone", async () => {
      const now = Date.now() + 60_000;
      await store.admit([fixture('a1', { debounceKey: 's/a' })], 0);
      const [a] = await store.claimDue(now, 30_000, 10);
      await store.release(a as NonNullable<typeof a>, now + 10_000); // its flush failed: again at +10 s
      await store.admit([fixture('b1', { debounceKey: 's/b', closeNow: true })], 0); // waits behind a
      expect(await claim(now + 10_000, 'lost')).toHaveLength(1);
      await store.admit([fixture('a2', { debounceKey: 's/a' })], 0); // moves a's own deadline later
      expect(await undo('lost')).toBe(1);
      const [retried, ...others] = await store.claimDue(now + 10_000, 30_000, 10);
      expect(others).toEqual([]);
      expect(texts([retried as NonNullable<typeof retried>])).toEqual([['a1', 'a2']]);
      await store.commit(retried as NonNullable<typeof retried>, draft('a'), now + 10_001);
      expect(texts(await store.claimDue(now + 10_002, 30_000, 10))).toEqual([['b1']]);
    });
  });

  it('fails an admit that fewer replicas than waitReplicas acknowledged', async () => {
    // WAIT gives up after half the command timeout: the other half is the margin for its answer.
    const store = await RedisStore.open(server.url, { waitReplicas: 1, commandTimeoutMs: 1000 });
    await expect(store.admit([item()], 0)).rejects.toThrow(/only 0 of 1 replica acknowledged/);
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
