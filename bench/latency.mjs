// Ack latency at half load, and CPU when idle, for every server of bench/servers.mjs.
//
// Latency: one server at a time, so no other server competes for the two cores. Each run first
// finds the server's own max rate (autocannon, 50 connections, saturating, counted after
// BENCH_MAX_WARM=2 seconds of the same load: the steady state, flushes included), then drives it at
// HALF of that rate with a steady load (`paced` in bench/servers.mjs: request i sent at i/rate,
// open loop, 20 connections) and reads the acknowledgement latency (request sent -> 200
// received) of every request. Every request is a new session, so the flushes of earlier
// requests run between acknowledgements, as in production.
// Like bench/ingest.mjs, every server stays up and each server's run sits between two runs of
// bare Koa ("bare, A, bare, B, ...", the order rotated per round): this VM's speed moves in
// steps of ~10 s, and runs of one server after another were often in different steps. A
// server's ratio in a round is its p99 over the mean of the two bare Koa p99s around it; the
// median and range over rounds are reported (a bare Koa run with a stall, 181 ms once, makes
// one round's ratios meaningless: the median over rounds is what to read). BENCH_SEQUENTIAL=1: the earlier layout (each
// server started and measured in turn, its p99 over bare Koa's of the same round).
// Beside the latency, each run reads from /proc/<pid>/task/<tid>/schedstat how long the
// server's main thread, and this process (the load generator), waited runnable on a run queue
// with no core free for them (ms per second of the run): on a small machine the server's own
// GC helper threads and the generator compete for the same cores. BENCH_HANDLING=1 also
// preloads bench/handling.mjs into every server and reports how long the server itself took
// over a request (`request` event to `finish`): what the client saw beyond that is waiting.
// BENCH_BURSTS=1 drives the half rate with autocannon's `overallRate` instead, as this bench did
// before: each connection sends its share of a second as fast as it can and then waits for the
// next second, so that is the max rate for half of each second, not half the max rate.
//
// Idle: every server started at once, left without traffic, and its CPU read from
// /proc/<pid>/task/*/schedstat (nanoseconds) over IDLE seconds, after SETTLE seconds: for the
// first minute or two after start V8 still compiles and its memory reducer shrinks the heap in
// repeated collections (more in a bigger program), which is start-up cost, not idle cost.
// Usage: node bench/latency.mjs [seconds=5] [rounds=3] [idle seconds=10] [settle seconds=150]
//   (rounds 0: idle CPU only; idle 0: latency only)
import autocannon from 'autocannon';
import { join } from 'node:path';
import { bracketed, cpuNs, median, newSessionRequests, paced, runQueueNs, start, targets } from './servers.mjs';

const seconds = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 3);
const idleSeconds = Number(process.argv[4] ?? 10);
const IDLE_SETTLE_MS = Number(process.argv[5] ?? 150) * 1000;

const load = (server, duration, options) =>
  autocannon({
    url: `${server.url}/webhooks/generic`,
    duration,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    requests: newSessionRequests(`${server.pid}-${Date.now()}`),
    ...options,
  });

const bursts = process.env.BENCH_BURSTS === '1';

/** Exact percentiles (ms, fractional) of one run's 2xx response times at `rate`. */
async function measured(server, duration, rate) {
  if (!bursts) {
    const r = await paced(server, { rate, seconds: duration, connections: 20 });
    return {
      result: { requests: { total: r.ok }, errors: r.errors, non2xx: r.non2xx },
      took: r.took,
      p50: r.p50,
      p99: r.p99,
      p999: r.p999,
    };
  }
  const options = { connections: 20, overallRate: rate };
  const times = [];
  const run = load(server, duration, options);
  run.on('response', (_client, status, _bytes, ms) => {
    if (status < 300) times.push(ms);
  });
  const result = await run;
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? NaN;
  return { result, took: duration, p50: at(0.5), p99: at(0.99), p999: at(0.999) };
}
const ms = (x) => x.toFixed(2);

/**
 * BENCH_RATE=<req/s>: drive every server at that same rate instead of half its own max (the
 * same traffic for all: how much later does a platform get its 200 at a given load).
 */
const fixedRate = process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined;

/** BENCH_HANDLING=1: also read each server's own handling time per request (bench/handling.mjs). */
const handling = process.env.BENCH_HANDLING === '1';
const execArgv = handling ? ['--import', join(new URL('.', import.meta.url).pathname, 'handling.mjs')] : [];
const ask = (server, message) =>
  new Promise((resolve) => {
    const onMessage = (reply) => {
      if (reply?.handling === undefined) return; // a server's own message (bare Koa's 'ready')
      server.child.off('message', onMessage);
      resolve(reply.handling);
    };
    server.child.on('message', onMessage);
    server.child.send(message);
  });

/**
 * Seconds of saturating load before the max is counted (BENCH_MAX_WARM=0: none, as before). A
 * webhook's flush runs a debounce window (1.5 s) after its acknowledgement: counted from a cold
 * start, a short saturating run leaves the flushes of its last 1.5 s after its end, and reads a
 * max the server cannot hold. Warmed first (as bench/ingest.mjs does), the counted seconds carry
 * the flushes of the load before them: the max of a steady state.
 */
const MAX_WARM = Number(process.env.BENCH_MAX_WARM ?? 2);

/** Find the server's max rate, let its buffers flush, then read the latency at half of it. */
async function latencyRun(server) {
  if (MAX_WARM > 0) await load(server, MAX_WARM, { connections: 50 });
  const max = (await load(server, Math.max(2, Math.round(seconds / 2)), { connections: 50 })).requests.average;
  // Let the saturating run's buffers flush (1.5 s window) before measuring at half load.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const rate = fixedRate ?? Math.max(1, Math.round(max / 2));
  if (handling) server.child.send('handling:reset');
  // How long the server's main thread and this process (the load generator) waited for a core.
  const waited = [runQueueNs(server.pid), runQueueNs(process.pid)];
  const { result, took, p50, p99, p999 } = await measured(server, seconds, rate);
  const [serverWait, generatorWait] = [runQueueNs(server.pid) - waited[0], runQueueNs(process.pid) - waited[1]].map(
    (ns) => ns / 1e6 / took,
  );
  const own = handling ? await ask(server, 'handling:read') : undefined;
  return {
    max,
    rate,
    got: result.requests.total / took,
    p50,
    p99,
    max99: p999,
    errors: result.errors + result.non2xx,
    serverWait,
    generatorWait,
    own,
  };
}

const sequential = process.env.BENCH_SEQUENTIAL === '1';
const runs = new Map(targets.map(([name]) => [name, []]));
if (sequential) {
  for (let round = 0; round < rounds; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length]);
    const measuredRound = new Map();
    for (const target of order) {
      const server = await start(target, { execArgv });
      await load(server, 2, { connections: 50 }); // warm-up
      measuredRound.set(target[0], await latencyRun(server));
      server.stop();
    }
    const bare = measuredRound.get(targets[0][0]);
    for (const [name] of targets)
      runs.get(name).push({ ...measuredRound.get(name), ratio: measuredRound.get(name).p99 / bare.p99 });
  }
} else if (rounds > 0) {
  const servers = [];
  for (const target of targets) servers.push(await start(target, { execArgv }));
  try {
    for (const server of servers) await load(server, 2, { connections: 50 }); // warm-up
    const [bare, ...others] = servers;
    await bracketed(bare, others, rounds, latencyRun, {
      onBare: (run) => runs.get(bare.name).push({ ...run, ratio: 1 }),
      onServer: (server, own, before, after) =>
        runs.get(server.name).push({ ...own, ratio: own.p99 / ((before.p99 + after.p99) / 2) }),
    });
  } finally {
    for (const server of servers) server.stop();
  }
}

const idle = new Map();
if (idleSeconds > 0) {
  const servers = [];
  for (const target of targets) servers.push(await start(target));
  await new Promise((resolve) => setTimeout(resolve, IDLE_SETTLE_MS));
  const before = servers.map((server) => cpuNs(server.pid));
  await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
  servers.forEach((server, i) => {
    const after = cpuNs(server.pid);
    // µs of CPU per second of wall time.
    idle.set(server.name, {
      main: (after.main - before[i].main) / 1000 / idleSeconds,
      all: (after.all - before[i].all) / 1000 / idleSeconds,
    });
    server.stop();
  });
}

const bareIdle = idle.get(targets[0][0]);
if (rounds > 0) {
  console.log(
    `\nack latency at ${fixedRate ? `${fixedRate} req/s for every server` : "half of each server's own max rate"}, ${bursts ? "autocannon's once-a-second bursts" : 'a steady load'}, ${rounds} rounds of ${seconds}s, one server at a time, ${sequential ? 'each started and measured in turn (BENCH_SEQUENTIAL=1)' : "each server's run between two of bare Koa"}, every request a new session (node ${process.version})`,
  );
  console.log(
    `| server | max req/s (median) | half rate held req/s | p50 ms | p99 ms (median, range) | p99 ÷ bare Koa p99 (median, range) | p99.9 ms | errors | server main thread waiting for a core, ms/s | load generator waiting, ms/s |${handling ? ' server handling p50 / p99 ms |' : ''}\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|${handling ? '---:|' : ''}`,
  );
  for (const [name] of targets) {
    const r = runs.get(name);
    const ratios = r.map((x) => x.ratio);
    const p99s = r.map((x) => x.p99);
    console.log(
      `| ${name} | ${Math.round(median(r.map((x) => x.max)))} | ${Math.round(median(r.map((x) => x.got)))} | ${ms(median(r.map((x) => x.p50)))} | ${ms(median(p99s))} (${ms(Math.min(...p99s))}–${ms(Math.max(...p99s))}) | ${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) | ${ms(median(r.map((x) => x.max99)))} | ${r.reduce((a, x) => a + x.errors, 0)} | ${median(r.map((x) => x.serverWait)).toFixed(0)} | ${median(r.map((x) => x.generatorWait)).toFixed(0)} |${handling ? ` ${ms(median(r.map((x) => x.own.p50)))} / ${ms(median(r.map((x) => x.own.p99)))} |` : ''}`,
    );
  }
}
if (idleSeconds > 0) {
  console.log(
    `\nidle CPU, no traffic, all servers side by side for ${idleSeconds}s, ${IDLE_SETTLE_MS / 1000}s after start (µs of CPU per second)`,
  );
  console.log('| server | main thread µs/s | all threads µs/s | all threads ÷ bare Koa |\n|---|---:|---:|---:|');
  for (const [name] of targets) {
    const x = idle.get(name);
    console.log(
      `| ${name} | ${x.main.toFixed(0)} | ${x.all.toFixed(0)} | ${(x.all / Math.max(1, bareIdle.all)).toFixed(2)}x |`,
    );
  }
}
