import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxRecord, Store } from '../../../src/core/ports/index.js';
import { openStore } from '../../../src/store/index.js';
import type { RedisStore } from '../../../src/store/redis/redis.js';
import { shardOf, shardPrefixes } from '../../../src/store/redis/shard-map.js';
import { delivery, draft, item, step } from '../../../src/testing/index.js';
import { until } from '../../support/helpers.js';
import { clusterForTests, sessionsOnEachShard, shardsOf } from '../redis-cluster.js';

// Attacks on the sharded store (`redis-cluster://`) on a real 3-master Redis Cluster: resets of
// a tag's keys (a master restarted without persistence), a master that fails a claim, and a
// slot that migrates while the store runs. Crash windows are made by calling a shard's own
// store directly, as sharded.test.ts does.
const cluster = clusterForTests();

let n = 0;
let at = 0;

describe('the sharded store under attack', () => {
  const opened: Store[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close().catch(() => undefined);
  });
  const fresh = async (keyPrefix = `attack${n++}`): Promise<Store> => {
    const store = await openStore(cluster().url, undefined, {
      keyPrefix,
      shards: 3,
      commandTimeoutMs: 3000,
      clock: 'caller',
    });
    opened.push(store);
    return store;
  };

  it("appends a shard's records again after the global keys were reset, instead of stopping at the gap for good", async () => {
    const keyPrefix = `global-reset${n++}`;
    const store = await fresh(keyPrefix);
    await flushOne(store, 's', 'a');
    await flushOne(store, 's', 'b');
    const life = await store.life!();
    // the master of the global keys restarted empty (its shard's keys kept: another tag)
    await dropTag(`{${keyPrefix}}:`);
    const record = await flushOne(store, 's', 'c');
    expect(record?.seq).toBe(1);
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['c']);
    // reported as the global keys' reset: no shard named
    const health = await store.health!();
    expect(health.rollbacks).toBe(1);
    expect(health.lastRollback).not.toHaveProperty('shard');
    // the outbox's seqs begin a new life (event stream ids name it)
    expect(await store.life!()).toEqual({ tag: expect.not.stringMatching(`^${life.tag}$`), since: 0 });
  });

  it('keeps what a shard commits after its keys and the global keys were reset together (one master restarted empty)', async () => {
    const keyPrefix = `both-reset${n++}`;
    const store = await fresh(keyPrefix);
    await flushOne(store, 's', 'a');
    await flushOne(store, 's', 'b');
    await flushOne(store, 's', 'c');
    await dropTag(`{${keyPrefix}}:`);
    await dropTag(shardPrefixes(keyPrefix, 3)[shardOf('s', 3)] as string);
    // a message admitted after the restart: acknowledged, so its output must come out
    const record = await flushOne(store, 's', 'after');
    expect(record?.seq).toBe(1);
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['after']);
  });

  it('keeps what a shard commits after its own keys were reset while the global cursor stayed ahead', async () => {
    const keyPrefix = `shard-reset${n++}`;
    const store = await fresh(keyPrefix);
    await flushOne(store, 's', 'a');
    await flushOne(store, 's', 'b');
    await flushOne(store, 's', 'c');
    const life = await store.life!();
    await dropTag(shardPrefixes(keyPrefix, 3)[shardOf('s', 3)] as string);
    const record = await flushOne(store, 's', 'after');
    expect(record?.seq).toBe(4);
    // reported (/v1/stats storeHealth, inbox_store_rollbacks_total), naming the shard
    expect(await store.health!()).toMatchObject({ rollbacks: 1, lastRollback: { shard: shardOf('s', 3) } });
    // the global seqs went on: the same life of them
    expect(await store.life!()).toEqual(life);
    const other = await fresh(keyPrefix); // and another instance sees the same, nothing twice
    await flushOne(other, 's', 'later');
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['a', 'b', 'c', 'after', 'later']);
  });

  it('appends, not drops, what a shard committed after a reset when another instance drains it with its cursor from before', async () => {
    const keyPrefix = `stale-drainer${n++}`;
    const store = await fresh(keyPrefix);
    const other = await fresh(keyPrefix);
    await flushOne(store, 's', 'a');
    await flushOne(store, 's', 'b');
    await appenderOf(other).drainAll(); // its cursor: b's
    await dropTag(`{${keyPrefix}}:`);
    await dropTag(shardPrefixes(keyPrefix, 3)[shardOf('s', 3)] as string);
    const t = (at += 1000);
    await store.admit([item('after', { at: t, closeNow: true })], t);
    const [batch] = await store.claimDue(t + 500, 1000, 10);
    // the first step alone (the committing instance died), then the other instance drains
    await shardsOf(store)[shardOf('s', 3)]!.commit(batch!, draft('after', 'pending'), t + 500);
    await appenderOf(other).drainAll();
    expect((await other.outboxAfter(0, 10)).map((r) => [r.id, r.seq])).toEqual([['after', 1]]);
  });

  it('appends what a shard commits after a reset on a master whose clock is behind the life the cursor names', async () => {
    const keyPrefix = `clock-behind${n++}`;
    const store = await fresh(keyPrefix);
    const shard = shardOf('s', 3);
    const shardPrefix = shardPrefixes(keyPrefix, 3)[shard] as string;
    await flushOne(store, 's', 'a');
    // the shard's life began on a clock far ahead (the cursor and the shard agree on it) ...
    const ahead = '9000000000000000';
    const client = new Redis.Cluster([{ host: '127.0.0.1', port: cluster().masters[0]!.port }]);
    try {
      const [, seq, id] = (await client.hget(`{${keyPrefix}}:cursors`, String(shard)))!.split(' ');
      await client.hset(`{${keyPrefix}}:cursors`, String(shard), `${ahead} ${seq} ${id}`);
      await client.set(`${shardPrefix}life`, ahead);
    } finally {
      client.disconnect();
    }
    await flushOne(store, 's', 'b');
    // ... then its master restarted empty, on a clock that is right
    await dropTag(shardPrefix);
    await flushOne(store, 's', 'after');
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['a', 'b', 'after']);
  });

  it('appends what a shard commits after it went back one record behind the cursor (a failover to a replica that lagged)', async () => {
    const keyPrefix = `lagged${n++}`;
    const store = await fresh(keyPrefix);
    const shardPrefix = shardPrefixes(keyPrefix, 3)[shardOf('s', 3)] as string;
    await flushOne(store, 's', 'a');
    await flushOne(store, 's', 'b');
    const replica = await snapshotTag(shardPrefix);
    await flushOne(store, 's', 'c'); // appended, then lost with the master
    await replica.restore();
    // the shard's seq is b's again: the next record takes c's shard seq
    const record = await flushOne(store, 's', 'after');
    expect(record?.seq).toBe(4);
    await flushOne(store, 's', 'later');
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['a', 'b', 'c', 'after', 'later']);
  });

  it('answers a commit whose answer was lost with its record and global seq, once, on the shard or moved already', async () => {
    const keyPrefix = `lost${n++}`;
    const store = await fresh(keyPrefix);
    const other = await fresh(keyPrefix);
    const shard = shardsOf(store)[shardOf('s', 3)] as RedisStore;
    for (const [id, movedFirst] of [
      ['still-on-shard', false],
      ['moved-already', true],
    ] as const) {
      const t = (at += 1000);
      await store.admit([item(id, { at: t, closeNow: true })], t);
      const [batch] = await store.claimDue(t + 500, 1000, 10);
      // the commit ran; its answer was lost; the client sends it again and the fence refuses it
      await shard.commit(batch!, draft(id, 'pending'), t + 500);
      if (movedFirst) {
        await appenderOf(other).drainAll();
        await appenderOf(other).drainAll(); // and dropped from the shard
        expect(await shard.outboxGet(id)).toBeUndefined();
      }
      const record = await store.commit(batch!, draft(id, 'pending'), t + 500);
      expect([record?.id, record?.seq]).toEqual([id, (await store.outboxGet(id))?.seq]);
    }
    expect((await store.outboxAfter(0, 10)).map((r) => [r.id, r.seq])).toEqual([
      ['still-on-shard', 1],
      ['moved-already', 2],
    ]);
  });

  it("gives every output one global seq, once, in each session's order, with two instances committing, cut short and draining at once", async () => {
    const keyPrefix = `race${n++}`;
    const instances = [await fresh(keyPrefix), await fresh(keyPrefix)];
    const sessions = ['s', 't', 'u', 'v', 'w', 'x'];
    const committed = new Map<string, string[]>(sessions.map((session) => [session, []]));
    let random = 7;
    const next = (below: number) => (random = (random * 48271) % 2147483647) % below;
    for (let round = 0; round < 12; round++) {
      const t = (at += 1000);
      await Promise.all(
        sessions.map((session, i) =>
          instances[i % 2]!.admit([item(`${session}${round}`, { sessionKey: session, at: t, closeNow: true })], t),
        ),
      );
      const batches = await instances[round % 2]!.claimDue(t + 500, 1000, 10);
      expect(batches).toHaveLength(sessions.length);
      await Promise.all([
        ...batches.map(async (batch) => {
          const id = `${batch.sessionKey}${round}`;
          const by = instances[next(2)]!;
          committed.get(batch.sessionKey)!.push(id);
          // a third of the commits stop after their first step (the instance died)
          if (next(3) === 0)
            await shardsOf(by)[shardOf(batch.sessionKey, 3)]!.commit(
              batch,
              draft(id, 'pending', batch.sessionKey),
              t + 500,
            );
          else await by.commit(batch, draft(id, 'pending', batch.sessionKey), t + 500);
        }),
        appenderOf(instances[0]!).drainAll(),
        appenderOf(instances[1]!).drainAll(),
      ]);
    }
    await Promise.all(instances.map((instance) => appenderOf(instance).drainAll()));
    const records = await instances[0]!.outboxAfter(0, 1000);
    expect(records.map((r) => r.seq)).toEqual(records.map((_r, i) => i + 1));
    expect(new Set(records.map((r) => r.id)).size).toBe(sessions.length * 12);
    for (const session of sessions)
      expect(records.filter((r) => r.sessionKey === session).map((r) => r.id)).toEqual(committed.get(session));
    // and the push queue hands each session's outputs out in that order
    const pushed = await instances[1]!.claimPush(at + 10_000, 60_000, 100);
    expect(pushed.map((lease) => lease.record.sessionKey).sort()).toEqual([...sessions].sort());
    for (const lease of pushed) expect(lease.record.id).toBe(committed.get(lease.record.sessionKey)![0]);
  });

  it("claims the other shards' due buffers while one shard's master fails, and keeps none leased unseen", async () => {
    const store = await fresh();
    const sessions = sessionsOnEachShard();
    for (const session of sessions)
      await store.admit([item(session, { sessionKey: session, at: 0, closeNow: true })], 0);
    const away = shardsOf(store)[1] as RedisStore;
    const claim = away.claimDue.bind(away);
    away.claimDue = () => Promise.reject(new Error('master away'));
    for (let call = 0; call < 3; call++) {
      // whichever shard the rotation starts from, the healthy shards' buffers come out
      const batches = await store.claimDue(1000 + call * 10_000, 1000, 10);
      expect(batches.map((b) => b.sessionKey).sort()).toEqual([sessions[0], sessions[2]].sort());
      for (const batch of batches) await store.release(batch, 0);
    }
    away.claimDue = claim;
    // passed over until it answers a ping (sent by the call that passes it over), then claimed
    const claimed = new Set<string>();
    await until(async () => {
      for (const batch of await store.claimDue(50_000, 1000, 10)) claimed.add(batch.sessionKey);
      return claimed.size === 3;
    });
  });

  it('passes a failing shard over until it answers a ping: one failed claim per outage, not one per call, logged once', async () => {
    const warnings: string[] = [];
    const logger = {
      warn: (_fields: object, message: string) => {
        warnings.push(message);
      },
    };
    const store = await openStore(cluster().url, undefined, {
      keyPrefix: `away${n++}`,
      shards: 3,
      commandTimeoutMs: 3000,
      clock: 'caller',
      logger,
    });
    opened.push(store);
    const sessions = sessionsOnEachShard();
    for (const session of sessions)
      await store.admit([item(session, { sessionKey: session, at: 0, closeNow: true })], 0);
    const away = shardsOf(store)[1] as RedisStore;
    const real = {
      claimDue: away.claimDue.bind(away),
      ping: away.ping.bind(away),
      nextDeadline: away.nextDeadline.bind(away),
    };
    let claims = 0;
    let pings = 0;
    away.claimDue = () => {
      claims++;
      return Promise.reject(new Error('master away'));
    };
    away.nextDeadline = () => Promise.reject(new Error('master away'));
    let answer: (() => void) | undefined;
    away.ping = () => {
      pings++;
      return new Promise<void>((resolve, reject) => {
        answer = resolve;
        setImmediate(() => pings < 3 && reject(new Error('still away')));
      });
    };
    for (let call = 0; call < 4; call++) {
      const batches = await store.claimDue(1000 + call * 10_000, 1000, 10);
      expect(batches.map((b) => b.sessionKey).sort()).toEqual([sessions[0], sessions[2]].sort());
      for (const batch of batches) await store.release(batch, 0);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(claims).toBe(1); // the first call found it failing; the others passed it over and pinged it
    expect(pings).toBe(3);
    expect(await store.nextDeadline()).toBeTypeOf('number'); // the other shards' deadlines, while this one is away
    // it answers the third ping: the next call claims its buffer again
    Object.assign(away, real);
    answer?.();
    await new Promise((resolve) => setImmediate(resolve));
    expect((await store.claimDue(50_000, 1000, 10)).map((b) => b.sessionKey).sort()).toEqual([...sessions].sort());
    expect(warnings.filter((w) => w.includes('shard 1 failed'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('shard 1 answers again'))).toHaveLength(1);
  });

  it("finds a correlation group on its session's shard while another shard's master fails", async () => {
    const store = await fresh();
    const sessions = sessionsOnEachShard();
    await store.admit([item('g', { sessionKey: sessions[0], correlation: step('k', delivery('A', 'p1')) })], 0);
    const away = shardsOf(store)[1] as RedisStore;
    away.correlation = () => Promise.reject(new Error('master away'));
    expect((await store.correlation('k', 10))?.deliveries.map((d) => d.botId)).toEqual(['A']);
    // not found anywhere else: the failing shard may hold it, so that is no answer
    await expect(store.correlation('other', 10)).rejects.toThrow('master away');
  });
});

describe('the sharded store while a slot of its keys migrates', () => {
  const own = clusterForTests();

  it('refuses a script while its slot migrates, rather than run it on the keys moved so far, and goes on once the slot has moved', async () => {
    const keyPrefix = 'migrating';
    const { url, masters } = own();
    const store = await openStore(url, undefined, { keyPrefix, shards: 3, commandTimeoutMs: 3000, clock: 'caller' });
    const tag = (shardPrefixes(keyPrefix, 3)[shardOf('s', 3)] as string).slice(1, -2);
    const slot = calculateSlot(tag);
    const nodes = masters.map((m) => new Redis(m.port, '127.0.0.1'));
    try {
      const ids = await Promise.all(nodes.map((node) => node.cluster('MYID') as Promise<string>));
      const owner = await ownerOf(nodes, slot);
      const target = (owner + 1) % nodes.length;
      expect((await store.admit([item('x', { claims: ['msg-x'], at: 1 })], 1))[0]?.verdict).toBe('accepted');
      // `redis-cli --cluster reshard` starts so, then moves the keys a few at a time
      await nodes[target]!.cluster('SETSLOT', slot, 'IMPORTING', ids[owner] as string);
      await nodes[owner]!.cluster('SETSLOT', slot, 'MIGRATING', ids[target] as string);
      // a retry of the message before any key moved: the new node has no claim of it
      await expect(store.admit([item('x', { claims: ['msg-x'], at: 2 })], 2)).rejects.toMatchObject({
        code: 'store_unavailable',
      });
      expect(Number(await nodes[target]!.cluster('COUNTKEYSINSLOT', slot))).toBe(0);
      const keys = (await nodes[owner]!.cluster('GETKEYSINSLOT', slot, 1000)) as string[];
      await nodes[owner]!.migrate('127.0.0.1', masters[target]!.port, '', 0, 5000, 'KEYS', ...keys);
      for (const node of nodes) await node.cluster('SETSLOT', slot, 'NODE', ids[target] as string);
      expect((await store.admit([item('x', { claims: ['msg-x'], at: 3 })], 3))[0]?.verdict).toBe('claimed');
      expect((await store.admit([item('y', { claims: ['msg-y'], at: 4 })], 4))[0]?.verdict).toBe('accepted');
    } finally {
      await store.close();
      for (const node of nodes) node.disconnect();
    }
  });
});

/** Admit one message of `session` that closes its buffer at once, claim it and commit it as output `id`. */
async function flushOne(store: Store, session: string, id: string): Promise<OutboxRecord | undefined> {
  const t = (at += 1000);
  await store.admit([item(id, { sessionKey: session, at: t, closeNow: true })], t);
  const [batch] = await store.claimDue(t + 500, 1000, 10);
  if (!batch) throw new Error(`nothing due for ${session}`);
  return store.commit(batch, draft(id, 'pending', session), t + 500);
}

/** Delete every key under `prefix` (a tag's keys), as a restart of its master without persistence would. */
async function dropTag(prefix: string): Promise<void> {
  for (const master of cluster().masters) {
    const client = new Redis(master.port, '127.0.0.1');
    try {
      const keys = await client.keys(`${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`);
      for (const key of keys) await client.del(key);
    } finally {
      client.disconnect();
    }
  }
}

function appenderOf(store: Store): { drainAll(): Promise<number> } {
  return (store as unknown as { appender: { drainAll(): Promise<number> } }).appender;
}

/** The keys under `prefix` as they are now; `restore` puts them back so (a replica that lagged, promoted). */
async function snapshotTag(prefix: string): Promise<{ restore(): Promise<void> }> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  const saved: Array<{ port: number; key: string; dump: Buffer }> = [];
  for (const master of cluster().masters) {
    const client = new Redis(master.port, '127.0.0.1');
    try {
      for (const key of await client.keys(pattern)) {
        const dump = await client.dumpBuffer(key);
        if (dump) saved.push({ port: master.port, key, dump });
      }
    } finally {
      client.disconnect();
    }
  }
  return {
    async restore() {
      await dropTag(prefix);
      for (const { port, key, dump } of saved) {
        const client = new Redis(port, '127.0.0.1');
        try {
          await client.restore(key, 0, dump, 'REPLACE');
        } finally {
          client.disconnect();
        }
      }
    },
  };
}

async function ownerOf(nodes: readonly Redis[], slot: number): Promise<number> {
  const ports = nodes.map((node) => node.options.port);
  const ranges = await nodes[0]!.cluster('SLOTS');
  const range = ranges.find(([from, to]) => slot >= from && slot <= to);
  return ports.indexOf(range?.[2]?.[1]);
}
