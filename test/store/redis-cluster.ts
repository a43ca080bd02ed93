import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { Store } from '../../src/core/ports/index.js';
import type { RedisStore } from '../../src/store/redis/redis.js';
import { shardOf } from '../../src/store/redis/shard-map.js';
import { tempDir } from '../support/helpers.js';
import { freePort } from '../support/net.js';
import { type RedisServer, startRedis } from '../support/redis.js';

/** The slots of a cluster (0 .. 16383). */
const SLOTS = 16_384;

export interface RedisCluster {
  /** `redis-cluster://127.0.0.1:<port>,…`: every master as a seed. */
  url: string;
  masters: readonly RedisServer[];
  stop(): Promise<void>;
}

/**
 * A throwaway Redis Cluster of three masters on loopback (no replicas, no persistence), made
 * as `redis-cli --cluster create` makes one, without its waits (about 5 s; this takes about 2,
 * the time a node waits after its start before it says `ok`): three `redis-server
 * --cluster-enabled yes`, each given a third of the slots and a config epoch of its own, then
 * introduced to each other (CLUSTER MEET). Resolves once every node says `cluster_state:ok`.
 */
export async function startCluster(): Promise<RedisCluster> {
  const dir = tempDir('redis-cluster-');
  const masters: RedisServer[] = [];
  const busPorts: number[] = [];
  try {
    for (let n = 0; n < 3; n++) {
      // The cluster bus port is its own setting: port + 10000 may be past 65535 for a free port.
      // A bus port taken before the node binds it stops the node: it starts again on fresh ports.
      for (let attempt = 1; masters.length === n; attempt++) {
        const busPort = await freePort();
        try {
          masters.push(
            await startRedis({
              dir: dir.path,
              args: [
                '--cluster-enabled',
                'yes',
                '--cluster-config-file',
                `nodes-${n}-${attempt}.conf`,
                '--cluster-port',
                String(busPort),
                '--cluster-node-timeout',
                '5000',
              ],
            }),
          );
          busPorts.push(busPort);
        } catch (error) {
          if (attempt >= 5) throw error;
        }
      }
    }
    await join(masters, busPorts);
    await untilOk(masters);
  } catch (error) {
    await Promise.all(masters.map((m) => m.stop()));
    dir.remove();
    throw error;
  }
  return {
    url: `redis-cluster://${masters.map((m) => `127.0.0.1:${m.port}`).join(',')}`,
    masters,
    async stop() {
      await Promise.all(masters.map((m) => m.stop()));
      dir.remove();
    },
  };
}

/** A cluster for the enclosing `describe` (or file): started before its tests, stopped after them. */
export function clusterForTests(): () => RedisCluster {
  let cluster: RedisCluster | undefined;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => {
    if (!cluster) throw new Error('the Redis Cluster has not started');
    return cluster;
  };
}

/** The URLs of both shared store forms a file's tests run on, each started once for the file. */
export interface SharedStores {
  /** One redis-server: `redis://…`. */
  redis: () => string;
  /** A 3-master Redis Cluster: `redis-cluster://…`. */
  cluster: () => string;
  /** Both, named, for `describe.each` / `it.each`. */
  forms: Array<[name: string, url: () => string]>;
}

/** A redis-server and a 3-master cluster for the enclosing `describe` (or file), started together. */
export function sharedStoresForTests(): SharedStores {
  let server: RedisServer | undefined;
  let cluster: RedisCluster | undefined;
  beforeAll(async () => {
    [server, cluster] = await Promise.all([startRedis(), startCluster()]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([server?.stop(), cluster?.stop()]);
  });
  const started = <T>(it: T | undefined): T => {
    if (!it) throw new Error('the test stores have not started');
    return it;
  };
  const redis = () => started(server).url;
  const clusterUrl = () => started(cluster).url;
  return {
    redis,
    cluster: clusterUrl,
    forms: [
      ['one Redis', redis],
      ['a 3-master Redis Cluster', clusterUrl],
    ],
  };
}

/** Slots split in thirds as `redis-cli --cluster create` splits them, distinct epochs, and every node meets the first. */
async function join(masters: readonly RedisServer[], busPorts: readonly number[]): Promise<void> {
  const clients = masters.map((m) => new Redis(m.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 }));
  try {
    await Promise.all(clients.map((client) => client.connect()));
    await Promise.all(
      clients.map(async (client, n) => {
        const first = Math.round((SLOTS * n) / clients.length);
        const last = Math.round((SLOTS * (n + 1)) / clients.length) - 1;
        await client.call('CLUSTER', 'ADDSLOTSRANGE', String(first), String(last));
        await client.call('CLUSTER', 'SET-CONFIG-EPOCH', String(n + 1));
      }),
    );
    const [first] = clients as [Redis];
    for (let n = 1; n < masters.length; n++) {
      await first.call('CLUSTER', 'MEET', '127.0.0.1', String(masters[n]!.port), String(busPorts[n]));
    }
  } finally {
    for (const client of clients) client.disconnect();
  }
}

async function untilOk(masters: readonly RedisServer[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const states = await Promise.all(
      masters.map(async (m) => {
        const client = new Redis(m.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
        try {
          await client.connect();
          return /cluster_state:ok/.test(await client.cluster('INFO'));
        } finally {
          client.disconnect();
        }
      }),
    );
    if (states.every(Boolean)) return;
    if (Date.now() > deadline) throw new Error('the Redis Cluster did not reach cluster_state:ok within 20 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The shards of a sharded store, to commit on one alone (what an instance killed between a commit's two steps leaves). */
export function shardsOf(store: Store): RedisStore[] {
  return (store as unknown as { shards: RedisStore[] }).shards;
}

/** Sessions that land on shard 0, 1 and 2 (of 3). */
export function sessionsOnEachShard(): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < 3; i++) {
    const session = `s${i}`;
    if (shardOf(session, 3) === found.length) found.push(session);
  }
  return found;
}
