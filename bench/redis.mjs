// The Redis store, measured: (1) ingest cost against bare Koa and the SQLite store, all side by
// side at one fixed rate (as bench/ingest-cost.mjs), with the redis-server's own CPU; (2) Redis
// round trips per ingested and per emitted message (MONITOR, by connection role and script) and
// the commands Redis runs for them (INFO commandstats, scripts' inner commands included);
// (3) two instances against one on one Redis, same total connections, saturating; (4) Redis
// memory per open buffer, per claim and per retained output (INFO memory over 10^4 items).
// Every round starts its own redis-server on a free port, without persistence.
// Usage: node bench/redis.mjs [seconds=5] [rounds=3] [rate per server=1000] [connections=50]
// BENCH_COMPARE=<folder with an earlier build's dist/> adds that build's Redis rows to sections 1
// and 2 (the same load on a redis-server of its own, in the same run): the scripts before and after.
// BENCH_ONLY=1,2 runs only those sections. BENCH_TRACE_SHARED=false runs every build without the
// trail in Redis (trace.shared false): the store's own work (a build older than the option keeps
// its trail, as those before the trail had none; BENCH_TRACE_SHARED_COMPARE=keep keeps it anyway).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import os from 'node:os';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { RedisStore } from '../dist/store/redis/redis.js';
import {
  cpuTicks,
  median,
  newSessionRequests,
  start as startServer,
  startRedisServer as startRedis,
  storeItem,
} from './servers.mjs';

const seconds = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 3);
const rate = Number(process.argv[4] ?? 1000);
const connections = Number(process.argv[5] ?? 50);
const spread = (values, digits = 1) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const post = (url, duration, extra = {}) =>
  autocannon({
    url: `${url}/webhooks/generic`,
    ...(duration === undefined ? {} : { duration }),
    method: 'POST',
    connections: 10,
    headers: { 'content-type': 'application/json' },
    requests: newSessionRequests(`${process.pid}-${Math.random()}`),
    ...extra,
  });
// Whatever happens, no server outlives the benchmark.
const pids = new Set();
process.on('exit', () => {
  for (const pid of pids)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
});
const start = async (target) => {
  const server = await startServer(target);
  pids.add(server.pid);
  return server;
};
const startRedisServer = async () => {
  const server = await startRedis();
  pids.add(server.pid);
  return server;
};
const compare = process.env.BENCH_COMPARE;
const compareName =
  compare && existsSync(join(compare, 'COMMIT'))
    ? readFileSync(join(compare, 'COMMIT'), 'utf8').trim()
    : 'compared build';
const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map(Number)) : undefined;
const section = (n) => !only || only.has(n);
/** This build, and the compared one when BENCH_COMPARE is set: [label, folder holding dist/]. */
const builds = [['this build', new URL('..', import.meta.url).pathname], ...(compare ? [[compareName, compare]] : [])];
const traceEnv = process.env.BENCH_TRACE_SHARED ? { INTAKE_TRACE_SHARED: process.env.BENCH_TRACE_SHARED } : {};
const redisTarget = (redis, env = {}, [label, folder] = builds[0]) => [
  `agent-intake ${label}, redis store`,
  join(folder, 'dist/main.js'),
  {
    INTAKE_STORE: redis.url,
    ...(label === builds[0][0] || process.env.BENCH_TRACE_SHARED_COMPARE !== 'keep' ? traceEnv : {}),
    ...env,
  },
];

const probe = await startRedisServer();
probe.stop();
console.log(
  `\n# Redis store benchmarks: ${os.availableParallelism()} cores, node ${process.version}, redis-server ${probe.version}, ${seconds}s per run, ${rounds} rounds`,
);

// --- 1. ingest cost, side by side ---------------------------------------------------------
if (section(1)) {
  const targets = [
    ['bare Koa + @koa/router', 'bench/bare-koa.mjs', {}],
    ['agent-intake, sqlite store', 'dist/main.js', { INTAKE_STORE: 'sqlite:./bench.db' }],
  ];
  const rows = new Map();
  for (let round = 0; round < rounds; round++) {
    // one redis-server per build, so each one's CPU is its own
    const redises = [];
    for (const _ of builds) redises.push(await startRedisServer());
    const servers = [];
    for (const target of [...targets, ...builds.map((build, i) => redisTarget(redises[i], {}, build))])
      servers.push(await start(target));
    const load = (server, duration) => post(server.url, duration, { overallRate: rate });
    await Promise.all(servers.map((server) => load(server, 2))); // warm-up
    const before = servers.map((server) => cpuTicks(server.pid));
    const redisBefore = redises.map((redis) => cpuTicks(redis.pid).all);
    const results = await Promise.all(servers.map((server) => load(server, seconds)));
    const redisUs = redises.map(
      (redis, i) => ((cpuTicks(redis.pid).all - redisBefore[i]) * 10_000) / results[2 + i].requests.total,
    );
    servers.forEach((server, i) => {
      const after = cpuTicks(server.pid);
      const n = results[i].requests.total;
      if (!rows.has(server.name)) rows.set(server.name, []);
      rows.get(server.name).push({
        main: ((after.main - before[i].main) * 10_000) / n,
        all: ((after.all - before[i].all) * 10_000) / n,
        redis: i >= 2 ? redisUs[i - 2] : undefined,
        n,
        errors: results[i].errors + results[i].non2xx,
        p99: results[i].latency.p99,
      });
      server.stop();
    });
    for (const redis of redises) redis.stop();
  }
  const bare = rows.get('bare Koa + @koa/router');
  console.log(
    `\n## 1. Ingest cost, one instance each, side by side at ${rate} req/s each (every request a new session: buffered, flushed, committed)`,
  );
  console.log(
    '| server | main thread µs/req | all threads µs/req | redis-server µs/req | bare Koa main ÷ this | requests | errors | p99 ms |\n|---|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const [name, r] of rows) {
    const ratios = r.map((x, i) => bare[i].main / x.main);
    const redis = r[0].redis === undefined ? '–' : spread(r.map((x) => x.redis));
    console.log(
      `| ${name} | ${spread(r.map((x) => x.main))} | ${spread(r.map((x) => x.all))} | ${redis} | ${spread(ratios, 2)}x | ${r.reduce((a, x) => a + x.n, 0)} | ${r.reduce((a, x) => a + x.errors, 0)} | ${median(r.map((x) => x.p99))} |`,
    );
  }
}

// --- 2. round trips and Redis commands per message ------------------------------------------
// Per build: the same N messages, each a new session, on a redis-server of its own.
async function roundTrips([label, folder]) {
  const sha = (text) => createHash('sha1').update(text).digest('hex');
  const { scripts: buildScripts } = await import(join(folder, 'dist/store/redis/scripts.js'));
  const scripts = new Map(
    Object.entries(buildScripts()).map(([name, text]) => [
      sha(text),
      name.replace(/^ai/, '').replace(/^./, (c) => c.toLowerCase()),
    ]),
  );
  const N = 2000;
  const redis = await startRedisServer();
  const server = await start(redisTarget(redis, { INTAKE_DEBOUNCE_WINDOW_MS: '100' }, [label, folder]));
  const admin = new Redis(redis.url);
  const roles = new Map();
  for (const line of String(await admin.client('LIST')).split('\n')) {
    const addr = /addr=(\S+)/.exec(line)?.[1];
    const name = /name=(\S*)/.exec(line)?.[1];
    if (addr) roles.set(addr, name?.replace('agent-intake:', '') || 'other');
  }
  const sent = [];
  const monitor = await admin.monitor(); // a connection of its own
  monitor.on('monitor', (_time, args, source) => {
    if (source === 'lua') return;
    const command = String(args[0]).toLowerCase();
    const script =
      command === 'evalsha'
        ? scripts.get(String(args[1]))
        : command === 'eval'
          ? scripts.get(sha(String(args[1])))
          : undefined;
    sent.push({ role: roles.get(source) ?? 'tail', what: script ? `${command} ${script}` : command });
  });
  // Idle polling first (no traffic), then N messages, then until every buffer is committed.
  await sleep(2000);
  const idle = sent.splice(0).length / 2;
  await admin.config('RESETSTAT');
  const started = Date.now();
  const result = await post(server.url, undefined, { amount: N });
  while (Number(await admin.get('{ai}:seq')) < N || (await admin.zcard('{ai}:due')) > 0) await sleep(20);
  const elapsed = (Date.now() - started) / 1000;
  const stats = String(await admin.info('commandstats'));
  monitor.disconnect();
  const accepted = result.requests.total - result.non2xx;
  const byRole = new Map();
  for (const { role, what } of sent) {
    const key = `${role}: ${what}`;
    byRole.set(key, (byRole.get(key) ?? 0) + 1);
  }
  const ingest = sent.filter((s) => s.role === 'ingest').length;
  let executed = 0;
  const inner = new Map();
  for (const match of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) {
    if (['config', 'monitor', 'info', 'client'].includes(match[1])) continue;
    executed += Number(match[2]);
    inner.set(match[1], Number(match[2]) / N);
  }
  server.stop();
  admin.disconnect();
  redis.stop();
  return {
    label,
    N,
    accepted,
    ingest: ingest / accepted,
    rest: (sent.length - ingest) / N,
    restCalls: sent.length - ingest,
    elapsed,
    idle,
    byRole,
    executed: executed / N,
    inner,
  };
}
if (section(2)) {
  const runs = [];
  for (const build of builds) runs.push(await roundTrips(build));
  console.log(
    `\n## 2. Redis round trips and commands per message (MONITOR and INFO commandstats, one instance, ${runs[0].N} messages, each a new session, debounce window 100 ms; each build on a redis-server of its own, one after the other)`,
  );
  console.log(`| | ${runs.map((r) => r.label).join(' | ')} |\n|---|${runs.map(() => '---:|').join('')}`);
  const row = (name, f) => console.log(`| ${name} | ${runs.map(f).join(' | ')} |`);
  row('round trips per ingested message (ingest connection)', (r) => r.ingest.toFixed(2));
  row('round trips per emitted message (background + tail, idle polling included)', (r) => r.rest.toFixed(2));
  row(
    "commands Redis executes per message (scripts' inner commands, EVALSHA and TIME included)",
    (r) => `**${r.executed.toFixed(1)}**`,
  );
  const names = [...new Set(runs.flatMap((r) => [...r.inner.keys()]))].sort(
    (x, y) => (runs[0].inner.get(y) ?? 0) - (runs[0].inner.get(x) ?? 0),
  );
  for (const name of names) row(`- ${name}`, (r) => (r.inner.get(name) ?? 0).toFixed(2));
  for (const r of runs) {
    console.log(
      `\n${r.label}: calls by connection (${r.restCalls} background and tail calls over ${r.elapsed.toFixed(1)} s, idle polling ${r.idle.toFixed(1)}/s)`,
    );
    console.log('| connection: command | calls | per message |\n|---|---:|---:|');
    for (const [key, calls] of [...r.byRole].sort((a, b) => b[1] - a[1]))
      console.log(`| ${key} | ${calls} | ${(calls / r.N).toFixed(2)} |`);
  }
}

// --- 5. Redis work per message, store calls only ------------------------------------------
// Each build's RedisStore driven directly (no HTTP, no service around it): admit N new sessions
// one message each, claim them due, commit each; INFO commandstats gives the time Redis spent
// inside those commands and how many it ran. The least noisy measure of the scripts themselves.
async function storeWork([label, folder]) {
  const { RedisStore: Store } = await import(join(folder, 'dist/store/redis/redis.js'));
  const N = 5000;
  const redis = await startRedisServer();
  const admin = new Redis(redis.url);
  const store = await Store.open(redis.url, { commandTimeoutMs: 5000 });
  const round = async (from) => {
    for (let n = from; n < from + N; n++) await store.admit([storeItem(n)], Date.now());
    await sleep(5);
    let done = 0;
    while (done < N) {
      const batches = await store.claimDue(Date.now(), 30_000, 100);
      for (const batch of batches) {
        await store.commit(
          batch,
          {
            id: `o-${batch.debounceKey}`,
            type: 'chat.processedMessage',
            sessionKey: batch.sessionKey,
            channel: 'g',
            createdAt: Date.now(),
            body: '{"content":"hello, where is ORD-123?"}',
            state: 'none',
          },
          Date.now(),
        );
      }
      done += batches.length;
      if (batches.length === 0) await sleep(2);
    }
  };
  await round(1_000_000); // warm-up
  await admin.config('RESETSTAT');
  await round(0);
  let usec = 0,
    calls = 0;
  for (const match of String(await admin.info('commandstats')).matchAll(/cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/g)) {
    if (/^(config|info|client|ping|script)/.test(match[1])) continue;
    calls += Number(match[2]);
    if (match[1] === 'evalsha' || match[1] === 'eval') usec += Number(match[3]);
  }
  await store.close();
  admin.disconnect();
  redis.stop();
  return { label, N, usec: usec / N, commands: calls / N };
}
if (section(5)) {
  const rows = new Map();
  for (let r = 0; r < rounds; r++) {
    for (const build of r % 2 ? [...builds].reverse() : builds) {
      const result = await storeWork(build);
      if (!rows.has(build[0])) rows.set(build[0], []);
      rows.get(build[0]).push(result);
    }
  }
  console.log(
    `\n## 5. Redis work per message, store calls only (each build's RedisStore admits, claims and commits 5000 new sessions, one message each; INFO commandstats; ${rounds} rounds, builds alternating)`,
  );
  console.log('| build | µs inside Redis scripts per message | commands per message |\n|---|---:|---:|');
  for (const [label, r] of rows)
    console.log(`| ${label} | ${spread(r.map((x) => x.usec))} | ${spread(r.map((x) => x.commands))} |`);
}

// --- 3. two instances against one, on one Redis ---------------------------------------------
if (section(3)) {
  const rows = { one: [], two: [] };
  for (let round = 0; round < rounds; round++) {
    for (const count of round % 2 ? [2, 1] : [1, 2]) {
      const redis = await startRedisServer();
      const servers = [];
      for (let i = 0; i < count; i++)
        servers.push(await start(redisTarget(redis, { INTAKE_DEBOUNCE_WINDOW_MS: '100' })));
      await Promise.all(servers.map((server) => post(server.url, 1, { connections: connections / count })));
      const redisBefore = cpuTicks(redis.pid).all;
      const results = await Promise.all(
        servers.map((server) => post(server.url, seconds, { connections: connections / count })),
      );
      const total = results.reduce((a, r) => a + r.requests.total, 0);
      rows[count === 1 ? 'one' : 'two'].push({
        rps: total / seconds,
        redisCpu: ((cpuTicks(redis.pid).all - redisBefore) / 100 / seconds) * 100,
        p99: Math.max(...results.map((r) => r.latency.p99)),
        errors: results.reduce((a, r) => a + r.errors + r.non2xx, 0),
      });
      for (const server of servers) server.stop();
      redis.stop();
    }
  }
  console.log(
    `\n## 3. One instance against two on one Redis, ${connections} connections in all, saturating, ${seconds}s runs (autocannon on the same machine)`,
  );
  console.log(
    '| instances | requests/s | redis-server CPU % | p99 ms (worst instance) | errors |\n|---|---:|---:|---:|---:|',
  );
  for (const [label, r] of [
    ['1', rows.one],
    ['2', rows.two],
  ]) {
    console.log(
      `| ${label} | ${spread(
        r.map((x) => x.rps),
        0,
      )} | ${spread(
        r.map((x) => x.redisCpu),
        0,
      )} | ${median(r.map((x) => x.p99))} | ${r.reduce((a, x) => a + x.errors, 0)} |`,
    );
  }
}

// --- 4. Redis memory per item ---------------------------------------------------------------
if (section(4)) {
  const ITEMS = 10_000;
  const redis = await startRedisServer();
  const admin = new Redis(redis.url);
  const used = async () => Number(/used_memory:(\d+)/.exec(String(await admin.info('memory')))?.[1]);
  const event = (n) => ({
    id: `wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTdFNzE4${n}`,
    kind: 'message',
    channel: 'wa',
    adapter: 'whatsapp',
    namespace: 'wa',
    conversation: { type: 'private', id: `1650555${n}` },
    sessionKey: `wa:1650555${n}`,
    sender: { id: `1650555${n}`, name: 'Ana' },
    segments: [{ type: 'text', text: '帮我查一下订单 ORD-123 的状态' }],
    text: '帮我查一下订单 ORD-123 的状态',
    media: [],
    mentions: [],
    timestamp: 1710234567,
    botId: '106540352242922',
    raw: undefined,
  });
  const item = (n, claims) => ({
    claims: claims
      ? [
          {
            key: `id:wa:${createHash('sha256').update(String(n)).digest('base64url').slice(0, 22)}`,
            space: 'id:wa',
            ttlMs: 300_000,
            maxKeys: 1_000_000,
          },
        ]
      : [],
    part: { debounceKey: `wa:1650555${n}\u0000u`, receivedAt: 0, event: event(n) },
    rule: { windowMs: 600_000, maxWaitMs: 600_000, maxMessages: 3 },
    closeNow: false,
  });
  const body = (n) =>
    JSON.stringify({
      type: 'chat.processedMessage',
      id: `V1StGXR8_Z5jdHi6B-m${n}`,
      seq: n,
      sessionKey: `wa:1650555${n}`,
      content: '帮我查一下订单 ORD-123 的状态',
      media: [],
      sourceChannel: 'whatsapp',
      channel: 'wa',
      timestamp: 1710234567,
      messageIds: [`wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTdFNzE4${n}`],
      merged: 1,
      sender: { id: `1650555${n}`, name: 'Ana' },
      conversation: { type: 'private', id: `1650555${n}` },
      replyBot: { channel: 'wa', botId: '106540352242922' },
      bots: [{ channel: 'wa', botId: '106540352242922' }],
      mentionedBots: [],
      mediaErrors: [],
    });
  const measure = async (name, run) => {
    await admin.flushall();
    const store = await RedisStore.open(redis.url);
    const before = await used();
    await run(store);
    const bytes = (await used()) - before;
    await store.close();
    return [name, bytes / ITEMS];
  };
  // 100 items (100 sessions) per admit call.
  const admitAll = async (store, claims) => {
    for (let n = 0; n < ITEMS; n += 100)
      await store.admit(
        Array.from({ length: 100 }, (_, i) => item(n + i, claims)),
        0,
      );
  };
  const flushAll = async (store, state) => {
    for (;;) {
      const batches = await store.claimDue(Date.now() + 3_600_000, 60_000, 500);
      if (batches.length === 0) return;
      await Promise.all(
        batches.map((batch) => {
          const n = Number(batch.sessionKey.slice('wa:1650555'.length));
          return store.commit(
            batch,
            {
              id: `V1StGXR8_Z5jdHi6B-m${n}`,
              type: 'chat.processedMessage',
              sessionKey: batch.sessionKey,
              channel: 'wa',
              createdAt: Date.now(),
              body: body(n),
              state,
              messageIds: [batch.parts[0].event.id],
            },
            Date.now(),
          );
        }),
      );
    }
  };
  const rows = [];
  rows.push(await measure('open buffer (one ~560-byte part, no claim)', (store) => admitAll(store, false)));
  const withClaim = await measure('open buffer + its exact-id claim', (store) => admitAll(store, true));
  rows.push(['exact-id claim (difference)', withClaim[1] - rows[0][1]]);
  rows.push(
    await measure('retained output, no agent (outbox entry + id index)', async (store) => {
      await admitAll(store, false);
      await flushAll(store, 'none');
    }),
  );
  rows.push(
    await measure('retained output waiting for the agent (+ push queue)', async (store) => {
      await admitAll(store, false);
      await flushAll(store, 'pending');
    }),
  );
  console.log(`\n## 4. Redis memory per item (INFO memory used_memory delta over ${ITEMS} items, one session each)`);
  console.log('| item | bytes |\n|---|---:|');
  for (const [name, bytes] of rows) console.log(`| ${name} | ${Math.round(bytes)} |`);
  admin.disconnect();
  redis.stop();
}
