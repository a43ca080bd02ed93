import { describe, expect, it } from 'vitest';
import type { InboundEvent } from '../../src/events/inbound.js';
import type { OutboxDraft } from '../../src/core/ports/index.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { RedisStore } from '../../src/store/redis/redis.js';
import type { Store } from '../../src/core/ports/index.js';
import { useRedis } from '../support/redis.js';

const rule = { windowMs: 0, maxWaitMs: 0, maxMessages: 1 };
const event = (id: string, sessionKey: string): InboundEvent => ({
  id, kind: 'message', channel: 'c', adapter: 'generic', namespace: 'c', conversation: { type: 'private', id: sessionKey },
  sessionKey, sender: { id: 'u' }, segments: [], text: id, media: [], mentions: [], timestamp: 1, raw: undefined,
});
const draft = (id: string, sessionKey: string, state: 'pending' | 'none'): OutboxDraft => ({
  id, type: 'chat.processedMessage', sessionKey, channel: 'c', createdAt: 1000, body: `{"type":"chat.processedMessage","id":"${id}"}`, state, messageIds: [id],
});

/** One record per session: the first is pushed and dies, the rest are plain (state none). */
async function outbox(store: Store): Promise<void> {
  for (let i = 1; i <= 5; i++) {
    const session = `s${i}`;
    const verdicts = await store.admit([{ claims: [], part: { debounceKey: session, receivedAt: 1, event: event(`m${i}`, session) }, rule, closeNow: false }], 1);
    const due = (verdicts[0] as { deadline: number }).deadline;
    const [batch] = await store.claimDue(due + 1, 5000, 10);
    await store.commit(batch!, draft(`o${i}`, session, i === 1 ? 'pending' : 'none'), due + 1);
  }
  const [lease] = await store.claimPush(Date.now() + 10_000, 5000, 10);
  await store.ackPush(lease!, { state: 'dead', attempts: 8, lastError: 'agent answered HTTP 400' }, Date.now());
}

const server = useRedis();

describe('outbox trim with a dead letter at the front', () => {
  it('trims the old records after a dead letter on Redis as the memory store does (Redis stops at the dead letter)', async () => {
    const memory = new MemoryStore();
    await outbox(memory);
    const redis = await RedisStore.open(server.url, { commandTimeoutMs: 3000 });
    try {
      await outbox(redis);
      // Everything is old and the count is 0: only the dead letter must stay.
      expect(await memory.trimOutbox(Number.MAX_SAFE_INTEGER, 0, Number.MAX_SAFE_INTEGER)).toBe(4);
      expect(await redis.trimOutbox(Number.MAX_SAFE_INTEGER, 0, Number.MAX_SAFE_INTEGER)).toBe(4);
    } finally {
      await redis.close();
    }
  });

  it('keeps the newest keepCount records besides the dead letter, on Redis as on the memory store', async () => {
    const memory = new MemoryStore();
    await outbox(memory);
    const redis = await RedisStore.open(server.url, { commandTimeoutMs: 3000, keyPrefix: 'keep-count' });
    try {
      await outbox(redis);
      // Nothing is old; the newest two (o4, o5) stay replayable, and the dead letter o1 besides them.
      for (const store of [memory, redis]) {
        expect(await store.trimOutbox(0, 2, Number.MAX_SAFE_INTEGER)).toBe(2);
        expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['o1', 'o4', 'o5']);
      }
    } finally {
      await redis.close();
    }
  });
});
