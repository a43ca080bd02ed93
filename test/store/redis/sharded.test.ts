import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { LeasedBatch, Store } from '../../../src/core/ports/index.js';
import { openStore } from '../../../src/store/index.js';
import type { RedisStore } from '../../../src/store/redis/redis.js';
import { shardOf } from '../../../src/store/redis/shard-map.js';
import { ShardedRedisStore } from '../../../src/store/redis/sharded.js';
import { accepted, delivery, describeStoreContract, draft, item, step } from '../../../src/testing/index.js';
import { clusterForTests, sessionsOnEachShard, shardsOf } from '../redis-cluster.js';

// The sharded store (`redis-cluster://`) on a real 3-master Redis Cluster, its slots split as
// `redis-cli --cluster create` splits them (test/store/redis-cluster.ts). The store model check
// and the multi-instance tests run on it too (model-check.test.ts, multi-instance.e2e.test.ts).
const shared = clusterForTests();

let n = 0;
const open = (keyPrefix = `sharded${n++}`, shards = 3): Promise<Store> =>
  openStore(shared().url, undefined, { keyPrefix, shards, commandTimeoutMs: 3000, clock: 'caller' });

// The whole store contract on the sharded store, as on one Redis (redis-contract.test.ts): on the
// caller's clock, reopened on the same keys for the restart cases.
const prefixes = new WeakMap<Store, string>();
const openNamed = async (keyPrefix = `contract${n++}`): Promise<Store> => {
  const store = await open(keyPrefix);
  prefixes.set(store, keyPrefix);
  return store;
};
describeStoreContract('redis-cluster', () => openNamed(), {
  shared: true,
  sharded: true,
  async reopen(store) {
    await store.close();
    return openNamed(prefixes.get(store));
  },
});

describe('the sharded store on a 3-master Redis Cluster', () => {
  const opened: Store[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close().catch(() => undefined);
  });
  const fresh = async (keyPrefix?: string, shards?: number): Promise<Store> => {
    const store = await open(keyPrefix, shards);
    opened.push(store);
    return store;
  };

  it("keeps each shard's sessions on its own master, and the outbox on the global tag", async () => {
    const store = await fresh('spread');
    const sessions = sessionsOnEachShard();
    for (const session of sessions) await store.admit([item(session, { sessionKey: session })], 0);
    // Each master holds the buffer of one session: Cluster spreads the shards' hash tags.
    const keysPerMaster = await Promise.all(
      shared().masters.map(async (master) => {
        const client = new Redis(master.port, '127.0.0.1');
        try {
          return (await client.keys('*spread~*buf:*')).sort();
        } finally {
          client.disconnect();
        }
      }),
    );
    expect(keysPerMaster.map((keys) => keys.length)).toEqual([1, 1, 1]);
    expect(
      keysPerMaster
        .flat()
        .map((key) => key.slice(key.indexOf('buf:') + 4))
        .sort(),
    ).toEqual([...sessions].sort());
  });

  it("keeps a session's revisions and takeover on its shard's master, beside its buffer", async () => {
    const store = await fresh('second');
    const sessions = sessionsOnEachShard();
    for (const session of sessions) {
      await store.admit([item(`${session}-a`, { sessionKey: session })], 0);
      const recall = { kind: 'recall' as const, messageId: `${session}-a`, at: 0 };
      expect((await store.revise(session, [session], recall, 0, { maxRevisions: 4, ttlMs: 60_000 })).buffered).toBe(
        true,
      );
      await store.holdTakeover(session, 0, { holdMs: 1000, maxMs: 5000 }, 0);
      const state = await store.conversation(session, 1, { context: false });
      expect([state.revisions, state.takeover]).toEqual([[recall], { since: 0, until: 1000 }]);
    }
    const keysPerMaster = await Promise.all(
      shared().masters.map(async (master) => {
        const client = new Redis(master.port, '127.0.0.1');
        try {
          return (await client.keys('*second~*')).filter((key) => /:(buf|rev|tko):/.test(key)).sort();
        } finally {
          client.disconnect();
        }
      }),
    );
    // each master: one session's buffer, revisions and takeover
    const onEach = keysPerMaster.map((keys) => keys.map((key) => key.slice(key.indexOf('}:') + 2)));
    const sessionOf = onEach.map((keys) => keys[0]?.slice('buf:'.length) ?? '');
    expect(onEach).toEqual(sessionOf.map((session) => [`buf:${session}`, `rev:${session}`, `tko:${session}`]));
    expect([...sessionOf].sort()).toEqual([...sessions].sort());
  });

  it("finds a part by another bot's id for it from its correlation group, kept on its shard's master beside its buffer", async () => {
    const store = await fresh('copies');
    const sessions = sessionsOnEachShard();
    const copy = (session: string, at: number, bot: string) => {
      const made = item(session, {
        at,
        sessionKey: session,
        correlation: step(`k-${session}`, delivery(bot, `${bot}:${session}`)),
      });
      return { ...made, part: { ...made.part, correlationKey: `k-${session}` } };
    };
    for (const session of sessions) {
      await store.admit([copy(session, 0, 'A')], 0);
      await store.admit([copy(session, 10, 'B')], 10);
      const recall = { kind: 'recall' as const, messageId: `B:${session}`, at: 20 };
      expect((await store.revise(session, [session], recall, 20, { maxRevisions: 4, ttlMs: 60_000 })).buffered).toBe(
        true,
      );
    }
    const keysPerMaster = await Promise.all(
      shared().masters.map(async (master) => {
        const client = new Redis(master.port, '127.0.0.1');
        try {
          return (await client.keys('*copies~*')).filter((key) => /:(buf|corr):/.test(key)).sort();
        } finally {
          client.disconnect();
        }
      }),
    );
    // each master: one session's buffer and its group
    const onEach = keysPerMaster.map((keys) => keys.map((key) => key.slice(key.indexOf('}:') + 2)));
    const sessionOf = onEach.map((keys) => keys[0]?.slice('buf:'.length) ?? '');
    expect(onEach).toEqual(sessionOf.map((session) => [`buf:${session}`, `corr:k-${session}`]));
    expect([...sessionOf].sort()).toEqual([...sessions].sort());
  });

  it('gives every part an id no other shard gives, and one global seq per output, in commit order', async () => {
    const store = await fresh();
    const sessions = sessionsOnEachShard();
    const ids = new Set<string>();
    for (let round = 0; round < 3; round++) {
      for (const session of sessions)
        ids.add(
          accepted((await store.admit([item(`${session}-${round}`, { sessionKey: session, at: 0 })], 0))[0]).partId,
        );
    }
    expect(ids.size).toBe(9);
    const batches = await store.claimDue(5000, 1000, 10);
    expect(batches.map((b) => b.sessionKey).sort()).toEqual([...sessions].sort());
    const seqs: number[] = [];
    for (const [i, batch] of batches.entries())
      seqs.push((await store.commit(batch, draft(`o${i}`, 'pending', batch.sessionKey), 5000))?.seq as number);
    expect(seqs).toEqual([1, 2, 3]);
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['o0', 'o1', 'o2']);
    expect(await store.lastSeq()).toBe(3);
    // the push queue is global: every session's output is there to push
    expect((await store.claimPush(5000, 1000, 10)).map((lease) => lease.record.id).sort()).toEqual(['o0', 'o1', 'o2']);
  });

  it("moves a commit cut short between its two steps to the outbox before the session's next output", async () => {
    const keyPrefix = `cut${n++}`;
    const store = await fresh(keyPrefix);
    const session = 's';
    const shard = shardsOf(store)[shardOf(session, 3)] as RedisStore;
    await store.admit([item('a', { sessionKey: session, at: 0, closeNow: true })], 0);
    const [first] = await store.claimDue(1000, 1000, 10);
    // The first step alone: what an instance killed between the two steps leaves.
    expect((await shard.commit(first as LeasedBatch, draft('first', 'pending'), 1000))?.id).toBe('first');
    expect(await store.outboxGet('first')).toBeUndefined();
    // Not in the outbox yet, so still counted: "no open buffers" means everything is in the outbox.
    expect(await store.openBuffers()).toBe(1);
    await store.admit([item('b', { sessionKey: session, at: 2000, closeNow: true })], 2000);
    const [second] = await store.claimDue(3000, 1000, 10);
    const record = await store.commit(second as LeasedBatch, draft('second', 'pending'), 3000);
    expect(record?.seq).toBe(2);
    expect((await store.outboxAfter(0, 10)).map((r) => [r.id, r.seq])).toEqual([
      ['first', 1],
      ['second', 2],
    ]);
    expect(await store.openBuffers()).toBe(0);
    // and pushed in that order
    const [head] = await store.claimPush(4000, 1000, 10);
    expect(head?.record.id).toBe('first');
  });

  it('moves a commit cut short on a quiet shard within a second, on another instance', async () => {
    const keyPrefix = `sweep${n++}`;
    const store = await fresh(keyPrefix);
    const other = await fresh(keyPrefix);
    const shard = shardsOf(store)[shardOf('s', 3)] as RedisStore;
    await store.admit([item('a', { at: 0, closeNow: true })], 0);
    const [batch] = await store.claimDue(1000, 1000, 10);
    await shard.commit(batch as LeasedBatch, draft('lonely'), 1000);
    await store.close();
    const deadline = Date.now() + 5000;
    while (!(await other.outboxGet('lonely')) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await other.outboxGet('lonely'))?.seq).toBe(1);
  });

  it('refuses to open with another shard count than the store was made with, naming redis.shards', async () => {
    await fresh('count', 3);
    await expect(open('count', 4)).rejects.toThrow(/redis\.shards: this store was created with 3 shards, not 4/);
    await fresh('count-one', 1);
    await expect(open('count-one', 3)).rejects.toThrow(/redis\.shards: this store was created with 1 shard, not 3/);
  });

  it("closes the turn an output opened, on the output's shard", async () => {
    const store = await fresh();
    const rule = { mode: 'collect' as const, maxMs: 60_000, maxHeld: 10 };
    const sessions = sessionsOnEachShard();
    for (const session of sessions)
      await store.admit([item(session, { sessionKey: session, at: 0, closeNow: true })], 0);
    for (const batch of await store.claimDue(1000, 1000, 10)) {
      const done = await store.commitTurn(
        batch,
        draft(`out-${batch.sessionKey}`, 'pending', batch.sessionKey),
        1000,
        rule,
      );
      expect(done?.held).toBe(false);
    }
    expect(await store.openTurnCount(2000)).toBe(3);
    expect((await store.openTurns(2000, 10)).map((view) => view.sessionKey).sort()).toEqual([...sessions].sort());
    const closed = await store.turnDone(`out-${sessions[1]}`, 3000);
    expect(closed).toEqual({ result: 'closed', sessionKey: sessions[1], held: 0 });
    expect(await store.openTurnCount(3000)).toBe(2);
    expect(await store.turnDone('never', 3000)).toEqual({ result: 'unknown' });
  });

  it('refuses a malformed cluster URL naming the store setting', async () => {
    await expect(ShardedRedisStore.open('redis-cluster://127.0.0.1')).rejects.toThrow(/^store: .* is not host:port/);
  });
});

describe('the sharded store while a master hangs', () => {
  const cluster = clusterForTests();

  it("fails admission on that master's shard and readiness within the command timeout, admits the other shards' sessions, and goes on once it answers", async () => {
    const own = cluster();
    const store = await openStore(own.url, undefined, { keyPrefix: 'hang', shards: 3, commandTimeoutMs: 500 });
    try {
      const sessions = sessionsOnEachShard();
      for (const session of sessions) await store.admit([item(`${session}-a`, { sessionKey: session })], Date.now());
      // shard i's hash tag is in the i-th third of the slots: the i-th master's
      own.masters[2]?.freeze();
      await expect(store.admit([item('c-b', { sessionKey: sessions[2] })], Date.now())).rejects.toMatchObject({
        code: 'store_unavailable',
      });
      await expect(store.ping()).rejects.toMatchObject({ code: 'store_unavailable' });
      // the other shards' sessions are admitted meanwhile
      expect((await store.admit([item('a-b', { sessionKey: sessions[0] })], Date.now()))[0]?.verdict).toBe('accepted');
      own.masters[2]?.thaw();
      expect((await store.admit([item('c-c', { sessionKey: sessions[2] })], Date.now()))[0]?.verdict).toBe('accepted');
      await store.ping();
    } finally {
      own.masters[2]?.thaw();
      await store.close();
    }
  });
});
