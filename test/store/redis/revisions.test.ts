import { describe, expect, it } from 'vitest';
import type { AdmitItem, RevisionKeep } from '../../../src/core/ports/index.js';
import type { ContextMessage, Revision } from '../../../src/events/context.js';
import { connect } from '../../../src/store/redis/connections.js';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { delivery, draft, item, step } from '../../../src/testing/store/fixtures.js';
import { useRedis } from '../../support/redis.js';

/*
 * Recalls, edits and takeovers on Redis beyond the contract: their keys, the kept context as
 * the scripts store it, and a flush lease ended on the server's clock with the session's lock.
 */

const redis = useRedis();
const keep: RevisionKeep = { maxRevisions: 4, ttlMs: 60_000 };
const recall = (messageId: string, at: number): Revision => ({ kind: 'recall', messageId, at });
const edit = (messageId: string, content: string, at: number): Revision => ({ kind: 'edit', messageId, at, content });
const open = (keyPrefix: string, caller = true) =>
  RedisStore.open(redis.url, { keyPrefix, commandTimeoutMs: 3000, ...(caller ? { clock: 'caller' as const } : {}) });

/** An item whose event carries a platform id of its own. */
function withPlatformId(text: string, platformId: string): AdmitItem {
  const admitted = item(text);
  admitted.part.event.platformId = platformId;
  return admitted;
}

describe('Redis store revisions and takeovers', () => {
  it("keeps a session's revisions under its hash tag until its latest runs out, and its takeover until it is ended", async () => {
    const store = await open('rev-keys');
    await store.revise('s', [], recall('a', 0), 0, { maxRevisions: 4, ttlMs: 1000 });
    await store.revise('s', [], recall('b', 0), 0, keep);
    await store.holdTakeover('s', 0, { holdMs: 1000, maxMs: 5000 }, 0);
    expect((await redis.admin.keys('{rev-keys}:*:s')).sort()).toEqual(['{rev-keys}:rev:s', '{rev-keys}:tko:s']);
    const ttl = await redis.admin.pttl('{rev-keys}:rev:s');
    expect(ttl).toBeGreaterThan(1000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(await redis.admin.pttl('{rev-keys}:tko:s')).toBe(-1);
    await store.endTakeover('s', 10);
    expect(await redis.admin.exists('{rev-keys}:tko:s')).toBe(0);
    await store.close();
  });

  it('reads exactly an empty conversation for an untouched session, and revisions and takeover on the override-only read', async () => {
    const store = await open('rev-read');
    expect(await store.conversation('s', 0)).toStrictEqual({ context: [], dropped: 0 });
    expect(await store.conversation('s', 0, { context: false })).toStrictEqual({ context: [], dropped: 0 });
    await store.setActivation('s', { group: 'always' }, 0);
    await store.revise('s', [], edit('a', 'A', 1), 1, keep);
    await store.holdTakeover('s', 1.5, { holdMs: 1000, maxMs: 5000 }, 1.5);
    expect(await store.conversation('s', 2, { context: false })).toStrictEqual({
      context: [],
      dropped: 0,
      activation: { group: 'always' },
      revisions: [edit('a', 'A', 1)],
      // a caller's time comes back as it was given
      takeover: { since: 1.5, until: 1001.5 },
    });
    await store.close();
  });

  it('rewrites an edited entry’s content alone, every other field as kept, again on a later edit, keeping its time to live', async () => {
    const store = await open('rev-edit');
    const message: ContextMessage = {
      messageId: 'm "1" /ü',
      sender: { id: 'u', name: 'Ann' },
      content: 'before',
      timestamp: 1.25,
      media: [],
    };
    await store.admit([item('a', { closeNow: true })], 0);
    const [batch] = await store.claimDue(0, 1000, 10);
    expect(await store.keepContext(batch!, [message], 0, { maxMessages: 10, ttlMs: 60_000 })).toBe(true);
    const content = 'line "one"\nline two {"media":[]}';
    expect((await store.revise('s', ['s'], edit(message.messageId, content, 1), 1, keep)).context).toBe(true);
    const [entry] = (await store.conversation('s', 2)).context;
    expect(entry?.message).toStrictEqual({ ...message, content });
    expect(await redis.admin.pttl('{rev-edit}:ctx:s')).toBeGreaterThan(0);
    expect((await store.revise('s', ['s'], edit(message.messageId, 'third', 3), 3, keep)).context).toBe(true);
    expect((await store.conversation('s', 4)).context.map((kept) => [kept.seq, kept.message.content])).toEqual([
      [entry!.seq, 'third'],
    ]);
    // an output carrying the context clears the edited entry as any other
    await store.admit([item('b', { closeNow: true })], 5);
    const [next] = await store.claimDue(5, 1000, 10);
    await store.commit(next!, { ...draft('o1'), contextUpTo: entry!.seq }, 5);
    expect((await store.conversation('s', 6)).context).toEqual([]);
    await store.close();
  });

  it('finds a part by its platform id, quotes and all, and not by its own id once it has one', async () => {
    const store = await open('rev-platform');
    await store.admit([withPlatformId('a', 'p "1" ü\\')], 0);
    expect((await store.revise('s', ['s'], recall('a', 1), 1, keep)).buffered).toBe(false);
    expect((await store.revise('s', ['s'], recall('p "1" ü\\', 1), 1, keep)).buffered).toBe(true);
    // a buffer named that belongs to another session is not searched
    await store.admit([item('b', { sessionKey: 't', debounceKey: 'tk' })], 0);
    expect((await store.revise('s', ['tk'], recall('b', 1), 1, keep)).buffered).toBe(false);
    await store.close();
  });

  it('knows a part by another bot’s id for it, quotes and all, only while its correlation group lives', async () => {
    const store = await open('rev-group');
    const copy = (at: number, bot: string, id: string) => {
      const made = item('m', { at, correlation: step('k', delivery(bot, id), { windowMs: 1000 }) });
      return { ...made, part: { ...made.part, correlationKey: 'k' } };
    };
    await store.admit([copy(0, 'A', 'A:1')], 0);
    await store.admit([copy(10, 'B', 'B "7" ü\\')], 10);
    expect((await store.revise('s', ['s'], edit('B "7" ü\\', 'x', 999), 999, keep)).buffered).toBe(true);
    // the group, 1000 ms from its first copy, is over by the caller's clock: its key is still there
    expect(await redis.admin.exists('{rev-group}:corr:k')).toBe(1);
    expect((await store.revise('s', ['s'], recall('B "7" ü\\', 1000), 1000, keep)).buffered).toBe(false);
    expect((await store.revise('s', ['s'], recall('m', 1000), 1000, keep)).buffered).toBe(true);
    await store.close();
  });

  it('forgets the token of the claim whose lease it ended: a resent claim hands nothing out, an undo gives nothing back', async () => {
    const store = await open('rev-token');
    const client = connect(redis.url, 'claims', {});
    await client.connect();
    await store.admit([item('a', { closeNow: true })], 0);
    // a claim under a token, as the store sends one (buffers.ts), its answer taken as lost
    expect(await client.aiClaimDue('{rev-token}:', '0', 60_000, 10, 'T1')).toHaveLength(1);
    expect((await store.revise('s', ['s'], recall('a', 0), 0, keep)).buffered).toBe(true);
    expect(await client.aiClaimDue('{rev-token}:', '0', 60_000, 10, 'T1')).toEqual([]);
    expect(await client.aiUnclaim('{rev-token}:', 'T1', 60_000)).toBe(0);
    expect((await store.claimDue(0, 60_000, 10)).map((batch) => batch.reason)).toEqual(['takeover']);
    client.disconnect();
    await store.close();
  });

  it("ends a lease on the server's clock, its session's lock moving with it: the buffer is taken over first, a later one of the session after its commit", async () => {
    const store = await open('rev-lease', false);
    await store.admit([item('a', { debounceKey: 'first', closeNow: true })], 0);
    const [leased] = await store.claimDue(0, 60_000, 10);
    await store.admit([item('b', { debounceKey: 'second', closeNow: true })], 0);
    // held behind the session's lock
    expect(await store.claimDue(0, 60_000, 10)).toEqual([]);
    expect((await store.revise('s', ['first', 'second'], recall('a', 0), 0, keep)).buffered).toBe(true);
    const [fence, leaseUntil] = await redis.admin.hmget('{rev-lease}:bm:first', 'fence', 'leaseUntil');
    expect(fence).not.toBe(String(leased!.fence));
    expect(Number(await redis.admin.zscore('{rev-lease}:due', 'first'))).toBe(Number(leaseUntil));
    expect(await redis.admin.get('{rev-lease}:lock:s')).toMatch(new RegExp(`^${fence} ${leaseUntil}w first$`));
    expect(await store.renewLease(leased!, 0, 60_000)).toBe(false);
    expect(await store.commit(leased!, draft('stale'), 0)).toBeUndefined();
    const [again] = await store.claimDue(0, 60_000, 10);
    expect([again?.debounceKey, again?.reason]).toEqual(['first', 'takeover']);
    expect(await store.claimDue(0, 60_000, 10)).toEqual([]);
    expect((await store.commit(again!, draft('o1'), 0))?.id).toBe('o1');
    expect((await store.claimDue(0, 60_000, 10)).map((batch) => batch.debounceKey)).toEqual(['second']);
    await store.close();
  });
});
