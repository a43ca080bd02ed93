import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { tempDir } from '../helpers.js';
import { freePort, type RedisServer, startRedis } from './redis-server.js';

const run = promisify(execFile);

export interface RedisCluster {
  /** `redis-cluster://127.0.0.1:<port>,…`: every master as a seed. */
  url: string;
  masters: readonly RedisServer[];
  stop(): Promise<void>;
}

/**
 * A throwaway Redis Cluster of three masters on loopback (no replicas, no persistence), made
 * the way an operator makes one: three `redis-server --cluster-enabled yes`, then
 * `redis-cli --cluster create`, which gives each master a third of the slots. Resolves once
 * every node says `cluster_state:ok`.
 */
export async function startCluster(): Promise<RedisCluster> {
  const dir = tempDir('redis-cluster-');
  const masters: RedisServer[] = [];
  try {
    for (let n = 0; n < 3; n++) {
      // The cluster bus port is its own setting: port + 10000 may be past 65535 for a free port.
      masters.push(await startRedis({
        dir: dir.path,
        args: ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${n}.conf`, '--cluster-port', String(await freePort()), '--cluster-node-timeout', '5000'],
      }));
    }
    await run('redis-cli', ['--cluster', 'create', ...masters.map((m) => `127.0.0.1:${m.port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
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

async function untilOk(masters: readonly RedisServer[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const states = await Promise.all(masters.map(async (m) => {
      const client = new Redis(m.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
      try {
        await client.connect();
        return /cluster_state:ok/.test(await client.cluster('INFO'));
      } finally {
        client.disconnect();
      }
    }));
    if (states.every(Boolean)) return;
    if (Date.now() > deadline) throw new Error('the Redis Cluster did not reach cluster_state:ok within 20 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
