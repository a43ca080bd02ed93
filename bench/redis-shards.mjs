// Past one Redis: the Redis work per message of the sharded store (`redis-cluster://`) on a real
// Redis Cluster of S masters on this machine, each master's share, against the store on one
// redis-server in the same run. Both are driven the same way through the store API: each
// message a new session, admitted, claimed and committed (for the sharded store: on the
// session's shard, then appended to the global outbox, whose tag lives on one master).
// Usage: node bench/redis-shards.mjs [messages=6000] [masters=3] [rounds=2]
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { Redis } from 'ioredis';
import { RedisStore } from '../dist/store/redis/redis.js';
import { ShardedRedisStore } from '../dist/store/redis/sharded.js';
import { cpuNs, freePort, median, startRedisServer, storeItem as item } from './servers.mjs';

const N = Number(process.argv[2] ?? 6000);
const MASTERS = Number(process.argv[3] ?? 3);
const rounds = Number(process.argv[4] ?? 2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const pids = new Set();
process.on('exit', () => {
  for (const pid of pids)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
});

/** Admit, claim and commit messages [from, from + N), one at a time. */
async function drive(store, from) {
  for (let n = from; n < from + N; n++) await store.admit([item(n)], Date.now());
  await sleep(5);
  let done = 0;
  while (done < N) {
    const batches = await store.claimDue(Date.now(), 30_000, 100);
    await Promise.all(
      batches.map((batch) =>
        store.commit(
          batch,
          {
            id: `o-${from}-${batch.debounceKey}`,
            type: 'chat.processedMessage',
            sessionKey: batch.sessionKey,
            channel: 'g',
            createdAt: Date.now(),
            body: '{"content":"hello, where is ORD-123?"}',
            state: 'none',
          },
          Date.now(),
        ),
      ),
    );
    done += batches.length;
    if (batches.length === 0) await sleep(2);
  }
}

/** A Redis Cluster of `count` masters, made with redis-cli --cluster create. */
async function startCluster(count) {
  const masters = [];
  for (let n = 0; n < count; n++) {
    const server = await startRedisServer([
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      `nodes-${n}.conf`,
      '--cluster-port',
      String(await freePort()),
    ]);
    pids.add(server.pid);
    masters.push(server);
  }
  execFileSync(
    'redis-cli',
    ['--cluster', 'create', ...masters.map((m) => `127.0.0.1:${m.port}`), '--cluster-replicas', '0', '--cluster-yes'],
    { stdio: 'ignore' },
  );
  for (;;) {
    const states = await Promise.all(
      masters.map(async (m) => {
        const client = new Redis(m.port, '127.0.0.1');
        try {
          return /cluster_state:ok/.test(await client.cluster('INFO'));
        } finally {
          client.disconnect();
        }
      }),
    );
    if (states.every(Boolean)) break;
    await sleep(100);
  }
  return { url: `redis-cluster://${masters.map((m) => `127.0.0.1:${m.port}`).join(',')}`, masters };
}

/** Per server, redis-server CPU per message (µs) over the measured part; and the client's wall time per message. */
async function measure(store, servers) {
  await drive(store, 1_000_000); // warm-up
  const before = servers.map((s) => cpuNs(s.pid).all);
  const started = process.hrtime.bigint();
  await drive(store, 0);
  const wallUs = Number(process.hrtime.bigint() - started) / 1000 / N;
  const perServer = servers.map((s, i) => (cpuNs(s.pid).all - before[i]) / 1000 / N);
  await store.close();
  return { perServer, wallUs };
}

async function one() {
  const server = await startRedisServer();
  pids.add(server.pid);
  const result = await measure(await RedisStore.open(server.url, { commandTimeoutMs: 5000 }), [server]);
  server.stop();
  return result;
}

async function sharded() {
  const cluster = await startCluster(MASTERS);
  const store = await ShardedRedisStore.open(cluster.url, { commandTimeoutMs: 5000, shards: MASTERS });
  const result = await measure(store, cluster.masters);
  for (const m of cluster.masters) m.stop();
  return result;
}

console.log(
  `\n# Redis past one server: ${os.availableParallelism()} cores, node ${process.version}, ${N} messages (each a new session: admit, claim, commit through the store), ${rounds} rounds`,
);
const ones = [];
const shardeds = [];
for (let r = 0; r < rounds; r++) {
  ones.push(await one());
  shardeds.push(await sharded());
}
const med = (values) => median(values).toFixed(1);
console.log(
  '\n| store | redis-server CPU per message, each server (µs) | all servers (µs) | the busiest server (µs) | client wall time per message (µs) |\n|---|---|---:|---:|---:|',
);
console.log(
  `| \`redis://\`, one server | ${med(ones.map((x) => x.perServer[0]))} | ${med(ones.map((x) => x.perServer[0]))} | ${med(ones.map((x) => x.perServer[0]))} | ${med(ones.map((x) => x.wallUs))} |`,
);
const cols = Array.from({ length: MASTERS }, (_, i) => med(shardeds.map((x) => x.perServer[i])));
console.log(
  `| \`redis-cluster://\`, ${MASTERS} masters, ${MASTERS} shards | ${cols.join(' / ')} | ${med(shardeds.map((x) => x.perServer.reduce((a, b) => a + b, 0)))} | ${med(shardeds.map((x) => Math.max(...x.perServer)))} | ${med(shardeds.map((x) => x.wallUs))} |`,
);
console.log(
  "\nCPU is each redis-server process's own (user + system, from schedstat) over the measured part, divided by all messages; the global keys live on one of the masters. The client drives one message at a time, so these are costs, not a saturation test.",
);
process.exit(0);
