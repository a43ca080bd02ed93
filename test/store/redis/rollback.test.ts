import type pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { recordingLogger } from '../../support/logger.js';
import { useRedis } from '../../support/redis.js';
import { commitOne } from './fixtures.js';
import { follow, type Followed } from '../../support/sse.js';

/*
 * The outbox seq going backwards: a FLUSHALL (or a restart without persistence) and a failover
 * to a replica that lagged (simulated: the newest records and the seq put back, the epoch kept).
 */

const redis = useRedis();
let tests = 0;
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const newPrefix = () => `rb${process.pid}-${++tests}`;

async function instance(prefix: string): Promise<Running> {
  const service = await startService({
    store: redis.url,
    redis: { keyPrefix: prefix, commandTimeoutMs: 3000 },
    debounce: { windowMs: 50, maxWaitMs: 1000, maxMessages: 10 },
  });
  cleanups.push(() => service.stop());
  return service;
}

function stream(url: string, headers: Record<string, string> = {}): Followed {
  const followed = follow(url, headers);
  cleanups.push(() => followed.close());
  return followed;
}

/** What a failover to a replica `behind` commits late leaves: the newest records and their seqs gone, the epoch kept. */
async function failOverToLaggingReplica(prefix: string, behind: number): Promise<void> {
  const [seqKey, out] = [`{${prefix}}:seq`, `{${prefix}}:out`];
  const kept = Number(await redis.admin.get(seqKey)) - behind;
  const entries = await redis.admin.xrange(out, '-', `${kept}-0`);
  await redis.admin.del(out);
  for (const [id, fields] of entries) await redis.admin.xadd(out, id, ...fields);
  await redis.admin.set(seqKey, kept);
}

const json = async (url: string): Promise<any> => (await fetch(url)).json();
const post = (service: Running, id: string) =>
  postJson(`${service.url}/webhooks/generic`, {
    id,
    sessionKey: `cli:${id}`,
    sender: { id: 'u' },
    content: `hello ${id}`,
  });

describe('Redis store reset under live event streams', () => {
  it('cuts every live stream on every instance after a FLUSHALL, counts it, and answers the resume 409 resume_point_ahead', async () => {
    const prefix = newPrefix();
    const [a, b] = await Promise.all([instance(prefix), instance(prefix)]);
    const onA = stream(`${a.url}/v1/events`);
    const onB = stream(`${b.url}/v1/events`);
    expect([await onA.status, await onB.status]).toEqual([200, 200]);
    await until(async () => (await json(`${b.url}/v1/stats`)).streams === 1);
    for (const id of ['m1', 'm2', 'm3']) expect((await post(a, id)).status).toBe(200);
    await until(
      () => onA.frames.length === 3 && onB.frames.length === 3,
      10_000,
      () => [onA.frames.length, onB.frames.length],
    );
    expect(onB.frames.map((frame) => frame.id.split('@')[0])).toEqual(['1', '2', '3']);

    await redis.admin.flushall();
    // Both streams end (their clients reconnect with Last-Event-ID 3) instead of staying silent.
    await until(
      () => onA.isEnded() && onB.isEnded(),
      10_000,
      () => [onA.isEnded(), onB.isEnded()],
    );
    const resumed = await fetch(`${b.url}/v1/events`, { headers: { 'last-event-id': '3' } });
    expect(resumed.status).toBe(409);
    expect(((await resumed.json()) as { error: unknown }).error).toMatchObject({ code: 'resume_point_ahead' });

    // Live again from the new seqs: the next output is seq 1 of the new store, delivered.
    const again = stream(`${b.url}/v1/events`);
    expect(await again.status).toBe(200);
    await until(async () => (await json(`${b.url}/v1/stats`)).streams === 1);
    expect((await post(a, 'm4')).status).toBe(200);
    await until(() => again.frames.length === 1, 10_000);
    expect(again.frames[0]).toMatchObject({ id: expect.stringMatching(/^1@/), data: { messageIds: ['m4'] } });
    expect(again.frames[0]!.id.split('@')[1]).not.toBe(onB.frames[0]!.id.split('@')[1]); // a new life of the seqs
    // A client resuming with its id of before (`3@<life>`) is told of the reset and replayed the new seqs.
    const tagged = stream(`${b.url}/v1/events`, { 'last-event-id': onB.frames[2]!.id });
    await until(() => tagged.frames.length === 2, 10_000);
    expect(tagged.frames[0]).toMatchObject({ event: 'gap', data: { after: 3, next: 1, reset: true } });
    expect(tagged.frames[1]).toMatchObject({ id: again.frames[0]!.id, data: { messageIds: ['m4'] } });

    for (const service of [a, b]) {
      const stats = await json(`${service.url}/v1/stats`);
      expect(stats.storeHealth).toMatchObject({ rollbacks: 1, lastRollback: { reason: 'epoch', seenSeq: 3, seq: 0 } });
      expect(await (await fetch(`${service.url}/metrics`)).text()).toMatch(/^inbox_store_rollbacks_total 1$/m);
    }
  });

  describe("regression: a resume after the reused seqs passed the client's Last-Event-ID", () => {
    // After a failover to a replica that lagged, a client that came back once the seqs had
    // passed its Last-Event-ID got 200 and skipped the records written under the reused seqs.
    it('tells the client of the reset and replays every record of the new seqs, skipping none', async () => {
      const prefix = newPrefix();
      const a = await instance(prefix);
      const live = stream(`${a.url}/v1/events`);
      expect(await live.status).toBe(200);
      await until(async () => (await json(`${a.url}/v1/stats`)).streams === 1);
      for (const id of ['m1', 'm2', 'm3']) expect((await post(a, id)).status).toBe(200);
      await until(() => live.frames.length === 3, 10_000);
      const lastEventId = live.frames[2]!.id;
      expect(lastEventId).toMatch(/^3@[\w-]{8}$/);

      await failOverToLaggingReplica(prefix, 2); // seq 1 again: m2 and m3 are gone
      await until(() => live.isEnded(), 10_000);
      // The client stays away while the store assigns seqs 2 to 5 again, past its Last-Event-ID.
      for (const id of ['n2', 'n3', 'n4', 'n5']) expect((await post(a, id)).status).toBe(200);
      await until(async () => (await a.intake.store.lastSeq()) === 5, 10_000);

      const resumed = stream(`${a.url}/v1/events`, { 'last-event-id': lastEventId });
      expect(await resumed.status).toBe(200);
      await until(
        () => resumed.frames.length === 5,
        10_000,
        () => resumed.frames,
      );
      expect(resumed.frames[0]).toMatchObject({ event: 'gap', data: { after: 3, next: 2, reset: true } });
      const replayed = resumed.frames.slice(1);
      expect(replayed.map((frame) => frame.id.split('@')[0])).toEqual(['2', '3', '4', '5']);
      expect(replayed.map((frame) => (frame.data as { messageIds: string[] }).messageIds[0]).sort()).toEqual([
        'n2',
        'n3',
        'n4',
        'n5',
      ]);
      expect(new Set(replayed.map((frame) => frame.id.split('@')[1]))).not.toContain(lastEventId.split('@')[1]);
      // A plain seq (a client of a release before lives) resumes as it always did.
      const plain = stream(`${a.url}/v1/events`, { 'last-event-id': '3' });
      await until(() => plain.frames.length === 2, 10_000);
      expect(plain.frames.map((frame) => frame.id.split('@')[0])).toEqual(['4', '5']);
    });
  });

  describe('the store alone', () => {
    async function open(prefix: string, logger: pino.Logger): Promise<RedisStore> {
      const store = await RedisStore.open(redis.url, { keyPrefix: prefix, logger, tailCheckMs: 50 });
      cleanups.push(() => store.close());
      return store;
    }

    it('tells the live tail of a seq gone backwards (a lagging replica promoted), logs it and counts it once', async () => {
      const prefix = newPrefix();
      const { logger, lines } = recordingLogger('warn');
      const store = await open(prefix, logger);
      const resets: unknown[] = [];
      const seen: number[] = [];
      cleanups.push(store.tail((record) => seen.push(record.seq), { reset: (rollback) => resets.push(rollback) }));
      for (const id of ['a', 'b', 'c', 'd', 'e']) await commitOne(store, id);
      await until(() => seen.length === 5);
      await failOverToLaggingReplica(prefix, 2);
      await until(() => resets.length === 1, 5000);
      expect(resets).toEqual([{ from: 5, to: 3 }]);
      expect(lines.map((line) => line.msg).join('\n')).toMatch(/OUTBOX SEQ WENT BACKWARDS from 5 to 3/);
      // The records committed from now on (seqs 4 and 5 again) reach the tail.
      await commitOne(store, 'f');
      await until(() => seen.length === 6);
      expect(seen.at(-1)).toBe(4);
      expect(await store.health()).toMatchObject({ rollbacks: 1, lastRollback: { reason: 'seq', seenSeq: 5, seq: 3 } });
    });

    it('begins a new life of the outbox seqs once, after the seq it was found at, which the other instances take', async () => {
      const prefix = newPrefix();
      const a = await open(prefix, recordingLogger('warn').logger);
      const b = await open(prefix, recordingLogger('warn').logger);
      const resets: unknown[] = [];
      cleanups.push(a.tail(() => undefined, { reset: (rollback) => resets.push(rollback) }));
      for (const id of ['a', 'b', 'c']) await commitOne(a, id);
      for (const id of ['d', 'e']) await commitOne(b, id);
      const before = await a.life();
      expect(await b.life()).toEqual(before);
      await failOverToLaggingReplica(prefix, 2);
      await until(() => resets.length === 1, 5000);
      const after = await a.life();
      expect(after).toEqual({ tag: expect.not.stringMatching(`^${before.tag}$`), since: 3 });
      // b finds it at its next commit (seq 4 again, b had seen 5): it takes a's life, begins none of its own.
      expect(await commitOne(b, 'f')).toBe(4);
      await until(async () => (await b.health()).rollbacks === 1);
      expect(await b.life()).toEqual(after);
      // An instance opened now knows the same life.
      expect(await (await open(prefix, recordingLogger('warn').logger)).life()).toEqual(after);
    });

    it('begins a new life after seq 0 when the store lost its keys (FLUSHALL)', async () => {
      const prefix = newPrefix();
      const store = await open(prefix, recordingLogger('warn').logger);
      const resets: unknown[] = [];
      cleanups.push(store.tail(() => undefined, { reset: (rollback) => resets.push(rollback) }));
      for (const id of ['a', 'b', 'c']) await commitOne(store, id);
      const before = await store.life();
      await redis.admin.flushall();
      await until(() => resets.length === 1, 5000);
      expect(await store.life()).toEqual({ tag: expect.not.stringMatching(`^${before.tag}$`), since: 0 });
    });

    it('finds the rollback at the next commit of an instance without a tail', async () => {
      const prefix = newPrefix();
      const { logger, lines } = recordingLogger('warn');
      const store = await open(prefix, logger);
      for (const id of ['a', 'b', 'c']) await commitOne(store, id);
      await failOverToLaggingReplica(prefix, 1);
      expect(await commitOne(store, 'd')).toBe(3);
      await until(() => lines.some((line) => /OUTBOX SEQ WENT BACKWARDS from 3 to 3/.test(line.msg)));
      expect((await store.health()).rollbacks).toBe(1);
      expect(await commitOne(store, 'e')).toBe(4);
      expect((await store.health()).rollbacks).toBe(1);
      // The commit's own record (seq 3 again) is the new life's first.
      expect((await store.life()).since).toBe(2);
    });
  });
});
