// The verdict trail on Redis, measured (CONTRACT §11): what writing every instance's trail to
// the store costs per message, and what an entry weighs in Redis.
// (1) Round trips per message by connection (MONITOR) and the commands Redis runs (INFO
// commandstats), with the trail in Redis and without it (the same Redis store with its trail
// hidden: the in-process ring instead), for N messages each a new session, posted over HTTP
// one at a time and 16 at a time, with the CPU per message of this process (the intake and
// autocannon) and of redis-server; (2) Redis memory per trail entry: MEMORY USAGE of the
// stream and of every index key after the run, over the stream's length.
// Everything in this process, on one redis-server without persistence. Under a minute.
// Each setup runs watched by MONITOR (the counts), then twice unwatched, the setups alternating
// (CPU, latency, rate: the mean of the two), after a warm-up run.
// Usage: node bench/trail.mjs [messages=1000]
import { createServer } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import pino from 'pino';
import { createIntake } from '../dist/service/intake.js';
import { RedisStore } from '../dist/store/redis/redis.js';
import { scripts as luaScripts } from '../dist/store/redis/scripts.js';
import { newSessionRequests, startRedisServer } from './servers.mjs';

const N = Number(process.argv[2] ?? 1000);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sha = (text) => createHash('sha1').update(text).digest('hex');
const scriptNames = new Map(Object.entries(luaScripts()).map(([name, lua]) => [sha(lua), name]));

const redis = await startRedisServer();
process.on('exit', () => redis.stop());
console.log(
  `\n# The trail on Redis: redis-server ${redis.version}, node ${process.version}, ${N} messages per run, each a new session, debounce window 100 ms`,
);

/** One intake on the Redis store under `prefix`; `trail: false` hides the store's trail (the in-process ring instead). */
async function service(prefix, trail) {
  const store = await RedisStore.open(redis.url, { keyPrefix: prefix });
  const shown = trail
    ? store
    : new Proxy(store, { get: (target, key) => (key === 'openTrail' ? undefined : Reflect.get(target, key, target)) });
  const intake = await createIntake({
    configFile: { store: redis.url, redis: { keyPrefix: prefix }, logLevel: 'silent', debounce: { windowMs: 100 } },
    env: {},
    logger: pino({ level: 'silent' }),
    cwd: mkdtempSync(join(tmpdir(), 'intake-trail-')),
    store: shown,
  });
  const server = createServer(intake.app.callback());
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    async stop() {
      server.closeAllConnections();
      server.close();
      await intake.close();
    },
  };
}

const admin = new Redis(redis.url);
const redisCpu = async () => {
  const info = String(await admin.info('cpu'));
  return Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]);
};

/**
 * One run of N messages. Watched: MONITOR counts round trips by connection (MONITOR costs both
 * sides CPU, so a watched run's CPU and rate are not read); unwatched: CPU and rate.
 */
async function run(prefix, trail, connections, watched) {
  const running = await service(prefix, trail);
  const roles = new Map();
  for (const line of String(await admin.client('LIST')).split('\n')) {
    const addr = /addr=(\S+)/.exec(line)?.[1];
    const name = /name=(\S*)/.exec(line)?.[1];
    if (addr) roles.set(addr, name?.replace('agent-intake:', '') || 'other');
  }
  const sent = [];
  const monitor = watched ? await admin.monitor() : undefined;
  monitor?.on('monitor', (_time, args, source) => {
    if (source === 'lua' || roles.get(source) === 'other') return;
    const command = String(args[0]).toLowerCase();
    const script = command === 'evalsha' ? scriptNames.get(String(args[1])) : undefined;
    sent.push({ role: roles.get(source) ?? 'new', what: script ?? command });
  });
  await sleep(500);
  sent.length = 0;
  await admin.config('RESETSTAT');
  const cpuBefore = process.cpuUsage();
  const redisBefore = await redisCpu();
  const started = Date.now();
  const result = await autocannon({
    url: `${running.url}/webhooks/generic`,
    method: 'POST',
    connections,
    amount: N,
    headers: { 'content-type': 'application/json' },
    requests: newSessionRequests(`${prefix}-${process.pid}`),
  });
  while (Number(await admin.get(`{${prefix}}:seq`)) < N || (await admin.zcard(`{${prefix}}:due`)) > 0) await sleep(20);
  await sleep(300); // the last trail writes
  const elapsed = (Date.now() - started - 300) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const redisUs = (((await redisCpu()) - redisBefore) * 1e6) / N;
  const stats = String(await admin.info('commandstats'));
  monitor?.disconnect();
  let executed = 0;
  for (const match of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g))
    if (!['config', 'monitor', 'info', 'client', 'memory', 'scan', 'xlen'].includes(match[1]))
      executed += Number(match[2]);
  const count = (filter) => sent.filter(filter).length / N;
  const row = {
    ingest: count((s) => s.role === 'ingest'),
    background: count((s) => s.role === 'background'),
    trailCalls: count((s) => s.what === 'aiTrailAdd'),
    all: count(() => true),
    executed: executed / N,
    cpuUs: (cpu.user + cpu.system) / N,
    redisUs,
    p50: result.latency.p50,
    p99: result.latency.p99,
    rps: N / elapsed,
    errors: result.errors + result.non2xx,
  };
  if (trail && connections === 16 && !watched) {
    // --- 2. memory per entry, from what this run left ---
    const entries = await admin.xlen(`{${prefix}}:trail`);
    const streamBytes = Number(await admin.memory('USAGE', `{${prefix}}:trail`, 'SAMPLES', '0'));
    let indexBytes = 0;
    let indexKeys = 0;
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `{${prefix}}:tx:*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        indexBytes += Number(await admin.memory('USAGE', key, 'SAMPLES', '0'));
        indexKeys++;
      }
    } while (cursor !== '0');
    rows.memory = { entries, streamBytes, indexBytes, indexKeys };
  }
  await running.stop();
  return row;
}

const rows = [];
let round = 0;
await run(`w${++round}`, true, 16, false); // warm-up: the JIT, the sockets
for (const connections of [1, 16]) {
  const timed = { false: [], true: [] };
  const watched = {};
  for (const trail of [false, true]) watched[trail] = await run(`b${++round}`, trail, connections, true);
  // Unwatched runs alternate, twice each: CPU and rates are the mean of the two.
  for (const trail of [false, true, true, false])
    timed[trail].push(await run(`b${++round}`, trail, connections, false));
  for (const trail of [false, true]) {
    const mean = (key) => timed[trail].reduce((sum, row) => sum + row[key], 0) / timed[trail].length;
    rows.push({
      ...watched[trail],
      setup: `${trail ? 'trail in Redis' : 'trail in process'}, ${connections} at a time`,
      cpuUs: mean('cpuUs'),
      redisUs: mean('redisUs'),
      p50: mean('p50'),
      p99: mean('p99'),
      rps: mean('rps'),
      errors: watched[trail].errors + timed[trail].reduce((sum, row) => sum + row.errors, 0),
    });
  }
}
admin.disconnect();

console.log(
  "\n## 1. Redis round trips and commands per message (MONITOR; INFO commandstats, scripts' inner commands included)",
);
console.log(
  '| setup | ingest connection | background connection | of which trail writes | all connections | commands Redis ran | bench process CPU µs | redis-server CPU µs | p50 / p99 ms | messages/s | errors |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.setup} | ${r.ingest.toFixed(2)} | ${r.background.toFixed(2)} | ${r.trailCalls.toFixed(2)} | ${r.all.toFixed(2)} | ${r.executed.toFixed(1)} | ${r.cpuUs.toFixed(0)} | ${r.redisUs.toFixed(0)} | ${r.p50.toFixed(1)} / ${r.p99.toFixed(1)} | ${r.rps.toFixed(0)} | ${r.errors} |`,
  );
}
const m = rows.memory;
console.log(
  `\n## 2. Redis memory per trail entry (${m.entries} entries, ${(m.entries / N).toFixed(2)} per message; ${m.indexKeys} index keys)`,
);
console.log(`| part | bytes | per entry | per message |\n|---|---:|---:|---:|`);
console.log(
  `| stream (the entries) | ${m.streamBytes} | ${(m.streamBytes / m.entries).toFixed(0)} | ${(m.streamBytes / N).toFixed(0)} |`,
);
console.log(
  `| index keys (id -> entries) | ${m.indexBytes} | ${(m.indexBytes / m.entries).toFixed(0)} | ${(m.indexBytes / N).toFixed(0)} |`,
);
console.log(
  `| both | ${m.streamBytes + m.indexBytes} | ${((m.streamBytes + m.indexBytes) / m.entries).toFixed(0)} | ${((m.streamBytes + m.indexBytes) / N).toFixed(0)} |`,
);
process.exit(0);
