import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxDraft, Store } from '../../../src/core/ports/index.js';
import type { InboundEvent } from '../../../src/events/inbound.js';
import { StreamHub } from '../../../src/http/event-stream.js';
import { MemoryStore } from '../../../src/store/local/memory.js';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { until } from '../../support/helpers.js';
import { silent } from '../../support/logger.js';
import { useRedis } from '../../support/redis.js';
import { serveStream } from '../../support/sse.js';
import { commitOne } from './fixtures.js';

/*
 * The outbox trim (src/store/redis/trim.ts) never passes a live hold of any instance: a stream
 * cut as too slow on instance A keeps its unread records from trimming for 10 minutes on every
 * instance; instance B, which knows nothing of A's streams, trims around them too.
 */

const redis = useRedis();
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function open(): Promise<RedisStore> {
  const store = await RedisStore.open(redis.url, { keyPrefix: 'hold', commandTimeoutMs: 3000, clock: 'caller' });
  cleanups.push(() => store.close());
  return store;
}

describe('what a cut stream had not read, on two instances', () => {
  it("is kept from another instance's trim for 10 minutes, then trimmed", async () => {
    const [a, b] = await Promise.all([open(), open()]);
    let now = 1_000_000;
    const hub = new StreamHub({ logger: silent, now: () => now, maxBufferedBytes: 64 * 1024 });
    const served = await serveStream(hub.events(a));
    cleanups.push(() => served.close());

    await commitOne(b, 'r1');
    // A client on A that asks to resume after 1, then never reads.
    const socket = connect(served.port, '127.0.0.1');
    socket.on('error', () => {});
    cleanups.push(() => socket.destroy());
    socket.write('GET / HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 1\r\n\r\n');
    socket.pause();
    await until(() => hub.count === 1);
    let last = 1;
    for (let i = 2; i <= 2000 && hub.count > 0; i++) last = await commitOne(b, `r${i}`, 10_000);
    await until(() => hub.count === 0, 5000);
    const unread = hub.keepAfterSeq();
    expect(unread).toBeGreaterThanOrEqual(1);
    expect(unread).toBeLessThan(last);
    // (The hold is written as the stream is cut; the trim below must come after it, as any later trim does.)
    const admin = new Redis(redis.url);
    cleanups.push(() => admin.disconnect());
    await until(async () => (await admin.hlen('{hold}:holds')) === 1, 2000).catch(() => undefined);

    // B trims as if no stream were open (it knows none): what the cut client had not read stays.
    now += 5 * 60_000;
    await b.trimOutbox(now, 0, Number.MAX_SAFE_INTEGER, now);
    const kept = await b.outboxAfter(0, 10_000);
    expect(kept[0]?.seq).toBe(unread + 1);
    expect(kept.at(-1)?.seq).toBe(last);

    // Past 10 minutes the hold is gone: the next trim takes them.
    now += 6 * 60_000;
    await b.trimOutbox(now, 0, Number.MAX_SAFE_INTEGER, now);
    expect(await b.outboxAfter(0, 10_000)).toEqual([]);
  });
});

const rule = { windowMs: 0, maxWaitMs: 0, maxMessages: 1 };
const event = (id: string, sessionKey: string): InboundEvent => ({
  id,
  kind: 'message',
  channel: 'c',
  adapter: 'generic',
  namespace: 'c',
  conversation: { type: 'private', id: sessionKey },
  sessionKey,
  sender: { id: 'u' },
  segments: [],
  text: id,
  media: [],
  mentions: [],
  timestamp: 1,
  raw: undefined,
});
const draft = (id: string, sessionKey: string, state: 'pending' | 'none'): OutboxDraft => ({
  id,
  type: 'chat.processedMessage',
  sessionKey,
  channel: 'c',
  createdAt: 1000,
  body: `{"type":"chat.processedMessage","id":"${id}"}`,
  state,
  messageIds: [id],
});

/** One record per session: the first is pushed and dies, the rest are plain (state none). */
async function outbox(store: Store): Promise<void> {
  for (let i = 1; i <= 5; i++) {
    const session = `s${i}`;
    const verdicts = await store.admit(
      [
        {
          claims: [],
          part: { debounceKey: session, receivedAt: 1, event: event(`m${i}`, session) },
          rule,
          closeNow: false,
        },
      ],
      1,
    );
    const due = (verdicts[0] as { deadline: number }).deadline;
    const [batch] = await store.claimDue(due + 1, 5000, 10);
    await store.commit(batch!, draft(`o${i}`, session, i === 1 ? 'pending' : 'none'), due + 1);
  }
  const [lease] = await store.claimPush(Date.now() + 10_000, 5000, 10);
  await store.ackPush(lease!, { state: 'dead', attempts: 8, lastError: 'agent answered HTTP 400' }, Date.now());
}

describe('regression: outbox trim with a dead letter at the front', () => {
  it('trims the old records after a dead letter on Redis as the memory store does (Redis stops at the dead letter)', async () => {
    const memory = new MemoryStore();
    await outbox(memory);
    const redisStore = await RedisStore.open(redis.url, { commandTimeoutMs: 3000 });
    try {
      await outbox(redisStore);
      // Everything is old and the count is 0: only the dead letter must stay.
      expect(await memory.trimOutbox(Number.MAX_SAFE_INTEGER, 0, Number.MAX_SAFE_INTEGER)).toBe(4);
      expect(await redisStore.trimOutbox(Number.MAX_SAFE_INTEGER, 0, Number.MAX_SAFE_INTEGER)).toBe(4);
    } finally {
      await redisStore.close();
    }
  });

  it('keeps the newest keepCount records besides the dead letter, on Redis as on the memory store', async () => {
    const memory = new MemoryStore();
    await outbox(memory);
    const redisStore = await RedisStore.open(redis.url, { commandTimeoutMs: 3000, keyPrefix: 'keep-count' });
    try {
      await outbox(redisStore);
      // Nothing is old; the newest two (o4, o5) stay replayable, and the dead letter o1 besides them.
      for (const store of [memory, redisStore]) {
        expect(await store.trimOutbox(0, 2, Number.MAX_SAFE_INTEGER)).toBe(2);
        expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['o1', 'o4', 'o5']);
      }
    } finally {
      await redisStore.close();
    }
  });
});
