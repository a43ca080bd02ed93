// A path past one Redis, simulated on this machine: how the Redis work per message splits when
// sessions are spread over several redis-servers (client-side routing by session key, as a
// Redis Cluster with a hash tag per session would), and what the one global part costs.
//
// Three shard servers each run the whole store for their sessions (RedisStore: claims, buffers,
// leases, commit); one more server plays the global part the design keeps in one place: the
// outbox sequence behind SSE ids and the id index (INCR + XADD + HSET per output, as the commit
// script does today). The shard figures still include each shard's own outbox append, so they
// are an upper bound for what a shard would do once that append moves to the global server.
// Baseline in the same run: one server doing all of it.
// Usage: node bench/redis-shards.mjs [messages=6000] [shards=3] [rounds=2]
import { createHash } from 'node:crypto';
import os from 'node:os';
import { Redis } from 'ioredis';
import { RedisStore } from '../dist/store/redis/redis.js';
import { cpuTicks, median, startRedisServer } from './servers.mjs';

const N = Number(process.argv[2] ?? 6000);
const SHARDS = Number(process.argv[3] ?? 3);
const rounds = Number(process.argv[4] ?? 2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const pids = new Set();
process.on('exit', () => { for (const pid of pids) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } });
const server = async () => { const s = await startRedisServer(); pids.add(s.pid); return s; };

const event = (n) => ({
  id: `m${n}`, kind: 'message', channel: 'g', adapter: 'generic', namespace: 'g', conversation: { type: 'private', id: `u${n}` }, sessionKey: `g:u${n}`,
  sender: { id: `u${n}`, name: 'Ana' }, segments: [{ type: 'text', text: 'hello, where is ORD-123?' }], text: 'hello, where is ORD-123?', media: [], mentions: [], timestamp: 1710234567, botId: 'b',
});
const item = (n) => ({
  claims: [{ key: `id:g:${n}`, space: 'id:g', ttlMs: 300_000, maxKeys: 1_000_000 }],
  part: { debounceKey: `g:u${n}\u0000u`, receivedAt: 0, event: event(n) }, rule: { windowMs: 1, maxWaitMs: 10_000, maxMessages: 20 }, closeNow: false,
});
const shardOf = (session, count) => createHash('sha1').update(session).digest().readUInt32BE(0) % count;

// The global part: the outbox append a commit makes (seq, stream entry, id index), one script.
const APPEND = `local seq = redis.call('INCR', KEYS[1] .. 'seq')
redis.call('XADD', KEYS[1] .. 'out', seq .. '-0', 'i', ARGV[1], 't', ARGV[2], 'k', ARGV[3], 'd', ARGV[4])
redis.call('HSET', KEYS[1] .. 'ids', ARGV[1], seq)
return seq`;

/** Admit, claim and commit messages [from, from + N) through the stores; each output also appended globally when `global` is given. */
async function drive(stores, global, from) {
  for (let n = from; n < from + N; n++) await stores[shardOf(`g:u${n}`, stores.length)].admit([item(n)], Date.now());
  await sleep(5);
  await Promise.all(stores.map(async (store, s) => {
    let done = 0;
    const expected = Array.from({ length: N }, (_, i) => from + i).filter((n) => shardOf(`g:u${n}`, stores.length) === s).length;
    while (done < expected) {
      const batches = await store.claimDue(Date.now(), 30_000, 100);
      for (const batch of batches) {
        const draft = { id: `o-${batch.debounceKey}`, type: 'chat.processedMessage', sessionKey: batch.sessionKey, channel: 'g', createdAt: Date.now(), body: '{"content":"hello, where is ORD-123?"}', state: 'none' };
        await store.commit(batch, draft, Date.now());
        if (global) await global.append('{g}:', draft.id, String(draft.createdAt), draft.sessionKey, JSON.stringify(draft));
      }
      done += batches.length;
      if (batches.length === 0) await sleep(2);
    }
  }));
}

async function run(count) {
  const servers = [];
  for (let i = 0; i < count; i++) servers.push(await server());
  const globalServer = count > 1 ? await server() : undefined;
  const stores = await Promise.all(servers.map((s) => RedisStore.open(s.url, { commandTimeoutMs: 5000 })));
  const global = globalServer ? new Redis(globalServer.url) : undefined;
  global?.defineCommand('append', { numberOfKeys: 1, lua: APPEND });
  await drive(stores, global, 1_000_000); // warm-up
  const before = servers.map((s) => cpuTicks(s.pid).all);
  const globalBefore = globalServer ? cpuTicks(globalServer.pid).all : 0;
  await drive(stores, global, 0);
  const perShard = servers.map((s, i) => ((cpuTicks(s.pid).all - before[i]) * 10_000) / N);
  const globalUs = globalServer ? ((cpuTicks(globalServer.pid).all - globalBefore) * 10_000) / N : 0;
  await Promise.all(stores.map((store) => store.close()));
  global?.disconnect();
  for (const s of [...servers, ...(globalServer ? [globalServer] : [])]) s.stop();
  return { perShard, globalUs };
}

console.log(`\n# Redis past one server, simulated: ${os.availableParallelism()} cores, node ${process.version}, ${N} messages (each a new session, admitted, claimed and committed through RedisStore), ${rounds} rounds`);
const one = [];
const many = [];
for (let r = 0; r < rounds; r++) {
  one.push(await run(1));
  many.push(await run(SHARDS));
}
const med = (values) => median(values).toFixed(1);
console.log('\n| layout | redis-server CPU per message, each server (µs) | all servers (µs) | the busiest server (µs) |\n|---|---|---:|---:|');
console.log(`| one server (today) | ${med(one.map((x) => x.perShard[0]))} | ${med(one.map((x) => x.perShard[0]))} | ${med(one.map((x) => x.perShard[0]))} |`);
const shardCols = Array.from({ length: SHARDS }, (_, i) => med(many.map((x) => x.perShard[i])));
console.log(`| ${SHARDS} shards by session + 1 global outbox | shards ${shardCols.join(' / ')}; global ${med(many.map((x) => x.globalUs))} | ${med(many.map((x) => x.perShard.reduce((a, b) => a + b, 0) + x.globalUs))} | ${med(many.map((x) => Math.max(...x.perShard, x.globalUs)))} |`);
console.log('\nCPU is each redis-server process\'s own (user + system) over the measured part, divided by all messages; the client drives one message at a time, so these are costs, not a saturation test.');
process.exit(0);
