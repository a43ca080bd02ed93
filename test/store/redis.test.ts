import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { InboundEvent } from '../../src/events/inbound.js';
import type { LeasedBatch, OutboxDraft, OutboxRecord } from '../../src/core/ports/index.js';
import { RedisStore } from '../../src/store/redis/redis.js';
import type { AdmitItem, ClaimSpec, CorrelationStep } from '../../src/core/ports/index.js';
import { useRedis } from '../support/redis.js';

const rule = { windowMs: 1000, maxWaitMs: 5000, maxMessages: 3 };
const claim = (key: string, ttlMs = 60_000): ClaimSpec => ({ key, space: 'id:c', ttlMs, maxKeys: 1000 });
const event = (id: string, sessionKey = 's'): InboundEvent => ({
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
const item = (id: string, extra: Partial<AdmitItem> = {}, debounceKey = 'k', sessionKey = 's'): AdmitItem => ({
  claims: [claim(`id-${id}`)],
  part: { debounceKey, receivedAt: 1, event: event(id, sessionKey) },
  rule,
  closeNow: false,
  ...extra,
});
const draft = (id: string, state: 'pending' | 'none' = 'none', sessionKey = 's'): OutboxDraft => ({
  id,
  type: 'chat.processedMessage',
  sessionKey,
  channel: 'c',
  createdAt: 1000,
  body: `{"type":"chat.processedMessage","id":"${id}"}`,
  state,
  messageIds: [id],
});
const step = (
  botId: string,
  platformId: string,
  kind: 'message' | 'notice' = 'message',
  time = 100,
): CorrelationStep => ({
  key: 'g1',
  kind,
  windowMs: 60_000,
  time,
  toleranceS: 5,
  delivery: { channel: `ch-${botId}`, adapter: 'onebot', botId, platformId, ids: { message_id: platformId }, at: 1 },
});

const server = useRedis();
const opened: RedisStore[] = [];
// On the caller's clock: these tests move time by the `now` they pass (leases, deadlines); the
// server's clock is tested in clock-skew.test.ts and by every multi-instance test.
const open = async (options = {}): Promise<RedisStore> => {
  const store = await RedisStore.open(server.url, { commandTimeoutMs: 3000, clock: 'caller', ...options });
  opened.push(store);
  return store;
};

afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
});
beforeEach(async () => {
  await server.admin.flushall();
});

/** Admit, then the `now` at which the buffer is due. */
async function admitDue(store: RedisStore, items: AdmitItem[]): Promise<number> {
  const verdicts = await store.admit(items, 0);
  return Math.max(...verdicts.map((v) => (v.verdict === 'accepted' ? v.deadline : 0)));
}

describe('Redis store: admission', () => {
  it('claims in order within one delivery: a repeated id in the same delivery is refused and records nothing', async () => {
    const store = await open();
    const verdicts = await store.admit(
      [item('1'), item('2', { claims: [claim('id-3'), claim('id-1')] }), item('3')],
      0,
    );
    expect(verdicts.map((v) => v.verdict)).toEqual(['accepted', 'claimed', 'accepted']);
    expect(verdicts[1]).toEqual({ verdict: 'claimed', claim: 1 });
    const [first, , third] = verdicts as Array<{ partId: string }>;
    expect(BigInt(third!.partId)).toBeGreaterThan(BigInt(first!.partId));
    expect(await store.openBuffers()).toBe(1);
    const due = (await store.nextDeadline()) as number;
    const [batch] = await store.claimDue(due, 5000, 10);
    expect(batch?.parts.map((p) => p.event.id)).toEqual(['1', '3']);
    expect(batch?.parts.map((p) => p.id)).toEqual([first!.partId, third!.partId]);
  });

  it('closes a buffer by window, max wait, count and command', async () => {
    const store = await open();
    const [a] = await store.admit([item('a', {}, 'win', 'win')], 0);
    const t0 = (a as { deadline: number }).deadline - rule.windowMs;
    const [b] = await store.admit([item('b', { rule: { ...rule, maxWaitMs: 10 } }, 'wait', 'wait')], 0);
    expect((b as { deadline: number }).deadline).toBeLessThan(t0 + 1000);
    await store.admit([item('c1', {}, 'count', 'count'), item('c2', {}, 'count', 'count')], 0);
    const [c3] = await store.admit([item('c3', {}, 'count', 'count')], 0);
    const [d] = await store.admit([item('d', { closeNow: true }, 'cmd', 'cmd')], 0);
    const now = Math.max(
      (c3 as { deadline: number }).deadline,
      (d as { deadline: number }).deadline,
      (b as { deadline: number }).deadline,
    );
    expect(now).toBeLessThan(t0 + 500);
    const batches = await store.claimDue(now, 5000, 10);
    const reasons = new Map(batches.map((x) => [x.debounceKey, x.reason]));
    expect(reasons).toEqual(
      new Map([
        ['wait', 'max_wait'],
        ['count', 'count'],
        ['cmd', 'command'],
      ]),
    );
    const [late] = await store.claimDue(t0 + 1000, 5000, 10);
    expect(late).toMatchObject({ debounceKey: 'win', reason: 'window' });
  });

  it('counts an album once toward maxMessages', async () => {
    const store = await open();
    const verdicts = await store.admit(
      [item('1', { unit: 'album' }), item('2', { unit: 'album' }), item('3', { unit: 'album' })],
      0,
    );
    const first = verdicts[0] as { deadline: number };
    expect((verdicts[2] as { deadline: number }).deadline).toBeGreaterThanOrEqual(first.deadline);
    expect(await store.claimDue(first.deadline - 1, 5000, 10)).toEqual([]);
  });

  it('correlates copies from other bots, treats the same bot and id as a retry, and a new id from the same bot as a new event', async () => {
    const store = await open();
    const [first] = await store.admit([item('m1', { correlation: step('A', 'p1') })], 0);
    expect(first).toMatchObject({
      verdict: 'accepted',
      correlation: { key: 'g1', kind: 'message', time: 100, deliveries: [{ botId: 'A' }] },
    });
    const [copy] = await store.admit([item('m2', { correlation: step('B', 'q1') })], 0);
    expect(copy).toMatchObject({
      verdict: 'correlated',
      retry: false,
      correlation: { deliveries: [{ botId: 'A' }, { botId: 'B' }] },
    });
    const [retry] = await store.admit([item('m3', { correlation: step('A', 'p1') })], 0);
    expect(retry).toMatchObject({ verdict: 'correlated', retry: true });
    const [repeat] = await store.admit([item('m4', { correlation: step('A', 'p2') })], 0);
    expect(repeat).toMatchObject({
      verdict: 'accepted',
      correlation: { deliveries: [{ botId: 'A', platformId: 'p2' }] },
    });
    expect((await store.correlation('g1', 0))?.deliveries).toHaveLength(1);
  });

  it('starts a new group for a notice whose time is beyond the tolerance, and keeps the old group when a claim refuses', async () => {
    const store = await open();
    await store.admit([item('n1', { correlation: step('A', 'x', 'notice', 100) })], 0);
    expect(await store.admit([item('n2', { correlation: step('A', 'x', 'notice', 103) })], 0)).toMatchObject([
      { verdict: 'correlated', retry: true },
    ]);
    expect(await store.admit([item('n1', { correlation: step('A', 'x', 'notice', 200) })], 0)).toEqual([
      { verdict: 'claimed', claim: 0 },
    ]);
    expect((await store.correlation('g1', 0))?.time).toBe(100);
    expect(await store.admit([item('n3', { correlation: step('A', 'x', 'notice', 200) })], 0)).toMatchObject([
      { verdict: 'accepted' },
    ]);
    expect((await store.correlation('g1', 0))?.time).toBe(200);
  });

  it('evicts the oldest claims past maxKeys and counts them', async () => {
    const store = await open();
    const capped = (key: string): ClaimSpec => ({ key, space: 'tiny', ttlMs: 60_000, maxKeys: 2 });
    await store.admit(
      ['a', 'b', 'c'].map((k) => item(k, { claims: [capped(k)] })),
      0,
    );
    expect(await store.admit([item('a2', { claims: [capped('a')] })], 0)).toMatchObject([{ verdict: 'accepted' }]);
    store.claimStats();
    await expect.poll(() => store.claimStats()).toEqual({ keys: 2, evicted: 2, evictedBySpace: { tiny: 2 } });
  });

  it('takes one round trip per admit, whatever the number of items', async () => {
    const store = await open();
    await store.admit([item('warm')], 0);
    const monitor = await server.admin.duplicate().monitor();
    const sent: string[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua') sent.push(String(args[0]).toLowerCase());
    });
    for (let i = 0; i < 20; i++)
      await store.admit([item(`r${i}a`), item(`r${i}b`, { correlation: step('A', `p${i}`) })], 0);
    await server.admin.ping('done');
    await expect.poll(() => sent.at(-1)).toBe('ping');
    monitor.disconnect();
    expect(sent.slice(0, -1)).toEqual(Array(20).fill('evalsha'));
  });
});

describe('Redis store: flush ownership across instances', () => {
  it("answers a second done for a turn already closed 'already', from an instance whose clock is behind", async () => {
    const [a, b] = [await open(), await open()];
    const rule = { mode: 'collect' as const, maxMs: 60_000, maxHeld: 10 };
    await a.admit([item('1', { closeNow: true })], 0);
    const [first] = await a.claimDue(10, 1000, 10);
    expect((await a.commitTurn(first as LeasedBatch, draft('out-1'), 10, rule))?.held).toBe(false);
    await a.admit([item('2', { closeNow: true })], 20);
    const [second] = await a.claimDue(30, 1000, 10);
    expect((await a.commitTurn(second as LeasedBatch, draft('out-2'), 30, rule))?.held).toBe(true);
    expect(await a.turnDone('out-1', 1000)).toMatchObject({ result: 'closed', held: 1 });
    // B's clock is 1 ms behind A's: the turn's end (A's 1000) is still ahead of it.
    expect(await b.turnDone('out-1', 999)).toMatchObject({ result: 'already' });
  });

  it('lets one of two racing owners commit a batch; the stale fence changes nothing', async () => {
    const [a, b] = [await open(), await open()];
    const due = await admitDue(a, [item('1'), item('2')]);
    const [claimedA, claimedB] = await Promise.all([a.claimDue(due, 1000, 10), b.claimDue(due, 1000, 10)]);
    expect(claimedA.length + claimedB.length).toBe(1);
    const owner = (claimedA[0] ?? claimedB[0])!;
    const [taken] = await b.claimDue(owner.leaseUntil + 1, 1000, 10);
    expect(taken).toMatchObject({ reason: 'takeover', parts: owner.parts });
    expect(taken!.fence).toBeGreaterThan(owner.fence);
    expect(await a.commit(owner, draft('o1'), due)).toBeUndefined();
    expect(await a.renewLease(owner, due, 1000)).toBe(false);
    const record = await b.commit(taken!, draft('o1'), due);
    expect(record).toMatchObject({ seq: 1, id: 'o1' });
    expect(await a.outboxAfter(0, 10)).toHaveLength(1);
    expect(await a.openBuffers()).toBe(0);
  });

  it('keeps parts that arrived during a flush for the next batch, re-armed from their arrival', async () => {
    const store = await open();
    const due = await admitDue(store, [item('1')]);
    const [batch] = await store.claimDue(due, 5000, 10);
    const [late] = await store.admit([item('2')], 0);
    expect(await store.nextDeadline()).toBe(batch!.leaseUntil);
    await store.commit(batch!, draft('o1'), due);
    expect(await store.nextDeadline()).toBe((late as { deadline: number }).deadline);
    const [next] = await store.claimDue((late as { deadline: number }).deadline, 5000, 10);
    expect(next?.parts.map((p) => p.event.id)).toEqual(['2']);
  });

  it('closes a buffer at maxMessages and keeps a later part for the next batch', async () => {
    const store = await open();
    const three = { ...rule, maxMessages: 3 };
    const due = await admitDue(
      store,
      ['1', '2', '3', '4'].map((id) => item(id, { rule: three })),
    );
    const [batch] = await store.claimDue(due, 5000, 10);
    expect(batch?.reason).toBe('count');
    expect(batch?.parts.map((p) => p.event.id)).toEqual(['1', '2', '3']);
    await store.commit(batch!, draft('o1'), due);
    const [next] = await store.claimDue((await store.nextDeadline())!, 5000, 10);
    expect(next?.parts.map((p) => p.event.id)).toEqual(['4']);
  });

  it('flushes one buffer per session at a time; a failed one keeps the session until it commits', async () => {
    const store = await open();
    const due = Math.max(await admitDue(store, [item('1', {}, 'k1')]), await admitDue(store, [item('2', {}, 'k2')]));
    const first = await store.claimDue(due, 5000, 10);
    expect(first).toHaveLength(1);
    expect(await store.claimDue(due + 1, 5000, 10)).toEqual([]);
    // The flush failed: its buffer is due again at due + 10, and the other one must not overtake it.
    await store.release(first[0]!, due + 10);
    expect(await store.claimDue(due + 2, 5000, 10)).toEqual([]);
    const again = await store.claimDue(due + 10, 5000, 10);
    expect(again.map((b) => b.debounceKey)).toEqual([first[0]!.debounceKey]);
    await store.commit(again[0]!, draft('o1'), due + 11);
    const second = await store.claimDue(due + 12, 5000, 10);
    expect(second.map((b) => b.debounceKey)).toEqual([first[0]!.debounceKey === 'k1' ? 'k2' : 'k1']);
  });

  it('claims every due buffer at shutdown (now = Infinity) by the server clock', async () => {
    const store = await open();
    await store.admit([item('1', { closeNow: true })], 0);
    expect(await store.claimDue(Infinity, 5000, 10)).toHaveLength(1);
  });
});

describe('Redis store: outbox and push', () => {
  async function commitAll(store: RedisStore, drafts: OutboxDraft[]): Promise<OutboxRecord[]> {
    const records: OutboxRecord[] = [];
    for (const [i, d] of drafts.entries()) {
      const due = await admitDue(store, [item(`${d.id}-part${i}`, { closeNow: true }, `k-${d.id}`, d.sessionKey)]);
      const [batch] = await store.claimDue(due, 5000, 1);
      records.push((await store.commit(batch!, d, 1000))!);
    }
    return records;
  }

  it('pages records by seq and finds one by id', async () => {
    const store = await open();
    await commitAll(
      store,
      ['a', 'b', 'c'].map((id) => draft(id)),
    );
    expect((await store.outboxAfter(1, 10)).map((r) => r.id)).toEqual(['b', 'c']);
    expect((await store.outboxAfter(0, 2)).map((r) => r.seq)).toEqual([1, 2]);
    expect(await store.outboxGet('b')).toMatchObject({ seq: 2, state: 'none', attempts: 0, messageIds: ['b'] });
    expect(await store.outboxGet('nope')).toBeUndefined();
    expect(await store.lastSeq()).toBe(3);
  });

  it('tails commits from another instance in seq order', async () => {
    const [a, b] = [await open(), await open()];
    const seen: number[] = [];
    const stop = b.tail((record) => seen.push(record.seq));
    await (b as unknown as { tailer: { ready: Promise<void> } }).tailer.ready;
    await commitAll(
      a,
      ['a', 'b', 'c'].map((id) => draft(id)),
    );
    await expect.poll(() => seen).toEqual([1, 2, 3]);
    stop();
  });

  it('never answers lastSeq or outboxAfter ahead of a starting tail: a commit right after them reaches the listener', async () => {
    const [a, b] = [await open(), await open()];
    await commitAll(a, [draft('before')]);
    const seen: number[] = [];
    // A live SSE client starts at lastSeq(), a resuming one after its replay: the tail must not start past either.
    const stop = b.tail((record) => seen.push(record.seq));
    const from = await b.lastSeq();
    await commitAll(a, [draft('after')]);
    await expect.poll(() => seen, { timeout: 2000 }).toContain(from + 1);
    stop();
  });

  it('pushes one record per session at a time across two pushers, in order', async () => {
    const [a, b] = [await open(), await open()];
    await commitAll(a, [draft('1', 'pending'), draft('2', 'pending'), draft('x', 'pending', 'other')]);
    expect(await a.deliveryCounts()).toEqual({ pending: 3, dead: 0 });
    const now = 2000;
    const [leasesA, leasesB] = await Promise.all([a.claimPush(now, 1000, 10), b.claimPush(now, 1000, 10)]);
    const leases = [...leasesA, ...leasesB];
    expect(leases.map((l) => l.record.id).sort()).toEqual(['1', 'x']);
    const one = leases.find((l) => l.record.id === '1')!;
    expect(
      await a.ackPush(
        leases.find((l) => l.record.id === 'x')!,
        { state: 'delivered', attempts: 1 },
        now,
      ),
    ).toBe(true);
    expect(await b.claimPush(now + 1, 1000, 10)).toEqual([]);
    expect(await b.ackPush({ ...one, token: one.token + 100 }, { state: 'delivered', attempts: 1 }, now)).toBe(false);
    expect(await b.ackPush(one, { state: 'retry', attempts: 1, at: now + 500, lastError: 'HTTP 503' }, now)).toBe(true);
    expect(await a.claimPush(now + 499, 1000, 10)).toEqual([]);
    const [again] = await a.claimPush(now + 500, 1000, 10);
    expect(again?.record).toMatchObject({ id: '1', attempts: 1, lastError: 'HTTP 503', state: 'pending' });
    expect(await a.ackPush(again!, { state: 'delivered', attempts: 2 }, now + 500)).toBe(true);
    const [next] = await b.claimPush(now + 500, 1000, 10);
    expect(next?.record.id).toBe('2');
    // its pusher dies: after the lease another instance takes it over
    const [taken] = await a.claimPush(now + 1501, 1000, 10);
    expect(taken?.record.id).toBe('2');
    expect(await b.ackPush(next!, { state: 'delivered', attempts: 1 }, now + 1502)).toBe(false);
    expect(await a.ackPush(taken!, { state: 'delivered', attempts: 1 }, now + 1502)).toBe(true);
    expect(await a.deliveryCounts()).toEqual({ pending: 0, dead: 0 });
    expect(await a.outboxGet('1')).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  it('requeues each dead letter exactly once under concurrent calls, back in seq order', async () => {
    const [a, b] = [await open(), await open()];
    await commitAll(
      a,
      ['1', '2', '3'].map((id) => draft(id, 'pending')),
    );
    for (let i = 0; i < 3; i++) {
      const [lease] = await a.claimPush(2000, 1000, 1);
      await a.ackPush(lease!, { state: 'dead', attempts: 5, lastError: 'gone' }, 2000);
    }
    expect(await a.deliveryCounts()).toEqual({ pending: 0, dead: 3 });
    expect((await a.deadLetters(10)).map((r) => [r.id, r.state, r.lastError])).toEqual([
      ['1', 'dead', 'gone'],
      ['2', 'dead', 'gone'],
      ['3', 'dead', 'gone'],
    ]);
    const moved = await Promise.all([
      a.requeueDead('2', 10, 3000),
      b.requeueDead('2', 10, 3000),
      a.requeueDead(undefined, 10, 3000),
      b.requeueDead(undefined, 10, 3000),
    ]);
    expect(moved.reduce((x, y) => x + y, 0)).toBe(3);
    expect(await a.deliveryCounts()).toEqual({ pending: 3, dead: 0 });
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const [lease] = await b.claimPush(3000, 1000, 10);
      order.push(lease!.record.id);
      expect(lease!.record.attempts).toBe(0);
      await b.ackPush(lease!, { state: 'delivered', attempts: 1 }, 3000);
    }
    expect(order).toEqual(['1', '2', '3']);
  });

  it('trims old records but never pending or dead ones, nor ones a stream has not read', async () => {
    const store = await open();
    await commitAll(store, [draft('1'), draft('2', 'pending'), draft('3'), draft('4')]);
    // The pending record stays; the delivered ones around it go (as the embedded stores do).
    expect(await store.trimOutbox(Number.MAX_SAFE_INTEGER, 0, 100)).toBe(3);
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['2']);
    await commitAll(store, [draft('5'), draft('6')]);
    // Nothing a stream has not read (seq > 5) goes.
    expect(await store.trimOutbox(Number.MAX_SAFE_INTEGER, 0, 5)).toBe(1);
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['2', '6']);
    const [lease] = await store.claimPush(2000, 1000, 1);
    await store.ackPush(lease!, { state: 'delivered', attempts: 1 }, 2000);
    expect(await store.trimOutbox(0, 10, 100)).toBe(0);
    expect(await store.trimOutbox(Number.MAX_SAFE_INTEGER, 0, 100)).toBe(2);
    expect(await store.outboxGet('6')).toBeUndefined();
    expect(await store.lastSeq()).toBe(6);
  });
});

describe('Redis store: a lease run out', () => {
  it('is taken over before a later buffer of its session that waited for it', async () => {
    const store = await open();
    const due = await admitDue(store, [item('z1', {}, 's/zz')]);
    const [held] = await store.claimDue(due, 30_000, 10); // its owner then dies: nobody commits
    await store.admit([item('a1', { closeNow: true }, 's/aa')], 0);
    expect(await store.claimDue(due + 1, 30_000, 10)).toEqual([]); // waits for the lease
    const taken = await store.claimDue(held?.leaseUntil as number, 30_000, 10);
    expect(taken.map((t) => [t.debounceKey, t.reason])).toEqual([['s/zz', 'takeover']]);
  });

  it('still holds its session when a later buffer of it is scanned first after the lease ran out', async () => {
    const store = await open();
    const due = await admitDue(store, [item('a1', {}, 's/alice')]);
    const [held] = await store.claimDue(due, 100, 10); // its owner then dies
    // Bob writes after the lease ran out; nothing claimed meanwhile. His buffer is due first.
    await store.admit([item('b1', { closeNow: true }, 's/bob')], 0);
    const later = (held?.leaseUntil as number) + 50;
    const taken = await store.claimDue(later, 30_000, 10);
    expect(taken.map((t) => [t.debounceKey, t.reason])).toEqual([['s/alice', 'takeover']]);
    // The dead owner's late renewal and commit are refused; bob's batch comes after alice's.
    expect(await store.renewLease(held as NonNullable<typeof held>, later, 30_000)).toBe(false);
    expect(await store.commit(held as NonNullable<typeof held>, draft('stale'), later)).toBeUndefined();
    expect(await store.claimDue(later + 1, 30_000, 10)).toEqual([]);
    await store.commit(taken[0] as NonNullable<(typeof taken)[0]>, draft('a'), later + 2);
    expect((await store.claimDue(later + 3, 30_000, 10)).map((t) => t.debounceKey)).toEqual(['s/bob']);
  });

  it("holds a failed flush's session until the buffer is retried, however late that is", async () => {
    const store = await open();
    const due = await admitDue(store, [item('a1', {}, 's/alice')]);
    const [first] = await store.claimDue(due, 30_000, 10);
    await store.release(first as NonNullable<typeof first>, due + 1000); // its flush failed
    await store.admit([item('b1', { closeNow: true }, 's/bob')], 0);
    // No instance claims until long after the retry time and its 30 s hold.
    const taken = await store.claimDue(due + 120_000, 30_000, 10);
    expect(taken.map((t) => t.debounceKey)).toEqual(['s/alice']);
  });
});
