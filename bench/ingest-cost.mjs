// Ingest cost per request: CPU the server spends on one webhook, for every server of
// bench/servers.mjs at once. All servers run side by side and get the same fixed request rate
// at the same time, so the minute-to-minute speed swings of a shared VM hit them all alike
// (bench/ingest.mjs measures throughput one server after another and sees those swings).
// Each request is a new message of a new session, so every one is buffered, waits out the
// debounce window and is flushed to the outbox. Under saturation the server's main thread is
// the bottleneck, so bare Koa's main-thread cost divided by a server's is the throughput ratio
// that cost allows. CPU is read from /proc (Linux): the main thread alone, and all threads.
//
// The load is steady (`paced` in bench/servers.mjs: request i sent at i/rate, open loop), as
// a platform's traffic is. BENCH_BURSTS=1 uses autocannon's `overallRate` instead, as this
// bench did before: every connection sends its share of a second as fast as it can and then
// waits for the next second, so the servers ran at their max rate for a fraction of each
// second, and the cost measured was close to the cost at saturation.
//
// The comparison is only fair while every server gets the same rate. On a busy 2-core machine
// the slower servers (or the load generator) fall behind first and then get fewer requests, so
// each round checks what each server really got: a server below HELD of the asked rate in a
// round is reported as behind (per server, per round), and its rounds are starred.
// BENCH_COMPARE=<dir with an earlier dist/> adds that build's rows (see bench/servers.mjs);
// BENCH_TRAFFIC=telegram sends Telegram updates instead of generic webhooks.
// Usage: node bench/ingest-cost.mjs [rate per server=500] [seconds=8] [rounds=3]
import autocannon from 'autocannon';
import { cpuNs, median, paced, start, targets, traffic, trafficLoad } from './servers.mjs';

const rate = Number(process.argv[2] ?? 500);
const seconds = Number(process.argv[3] ?? 8);
const rounds = Number(process.argv[4] ?? 3);
/** A round holds the rate for a server that got at least this share of the requests asked. */
const HELD = 0.95;

const bursts = process.env.BENCH_BURSTS === '1';

/** `seconds` of load at `rate`: requests answered, errors, p99 ms, and the seconds it took. */
async function load(server, duration) {
  if (!bursts) {
    const r = await paced(server, { rate, seconds: duration, connections: 10 });
    return { n: r.ok + r.non2xx, errors: r.errors + r.non2xx, p99: r.p99, took: r.took };
  }
  const r = await autocannon({
    ...trafficLoad(server.url, `${server.pid}-${Date.now()}`),
    connections: 10,
    duration,
    overallRate: rate,
  });
  return { n: r.requests.total, errors: r.errors + r.non2xx, p99: r.latency.p99, took: duration };
}

const rows = new Map(targets.map(([name]) => [name, []]));
for (let round = 0; round < rounds; round++) {
  const servers = [];
  for (const target of targets) servers.push(await start(target));
  await Promise.all(servers.map((server) => load(server, 2))); // warm-up
  const before = servers.map((server) => cpuNs(server.pid));
  const results = await Promise.all(servers.map((server) => load(server, seconds)));
  servers.forEach((server, i) => {
    const after = cpuNs(server.pid);
    const { n, errors, p99, took } = results[i];
    rows.get(server.name).push({
      main: (after.main - before[i].main) / 1000 / n,
      all: (after.all - before[i].all) / 1000 / n,
      // A steady load always sends every request; a server that fell behind took longer.
      n,
      got: n / Math.max(seconds, took),
      held: n / (rate * Math.max(seconds, took)),
      errors,
      p99,
    });
    server.stop();
  });
}

const bare = rows.get(targets[0][0]);
const range = (values, digits) => `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
console.log(
  `\ningest cost, all servers side by side at ${rate} req/s each for ${seconds}s (${bursts ? "autocannon's once-a-second bursts" : 'a steady load'}), median of ${rounds} rounds, ${traffic} webhooks, every request a new session (node ${process.version})`,
);
console.log(
  '| server | main thread µs/req (range) | all threads µs/req | bare Koa main ÷ this (median, range) | rate held (lowest round) | requests | errors | p99 ms |\n|---|---:|---:|---:|---:|---:|---:|---:|',
);
for (const [name] of targets) {
  const r = rows.get(name);
  const ratios = r.map((x, i) => bare[i].main / x.main);
  const held = Math.min(...r.map((x) => x.held));
  console.log(
    `| ${name} | ${median(r.map((x) => x.main)).toFixed(1)} (${range(
      r.map((x) => x.main),
      0,
    )}) | ${median(r.map((x) => x.all)).toFixed(1)} | ${median(ratios).toFixed(2)}x (${range(ratios, 2)}) | ${Math.round(held * 100)}%${held < HELD ? '*' : ''} | ${r.reduce((a, x) => a + x.n, 0)} | ${r.reduce((a, x) => a + x.errors, 0)} | ${median(r.map((x) => x.p99)).toFixed(1)} |`,
  );
}
for (const [name] of targets) {
  const behind = rows
    .get(name)
    .map((x, round) => [x, round])
    .filter(([x]) => x.held < HELD);
  if (behind.length > 0) {
    console.log(
      `* ${name} fell behind ${rate}/s in round ${behind.map(([x, round]) => `${round + 1} (${Math.round(x.got)}/s)`).join(', ')}: the machine (or the load generator) could not hold the rate for every server; its cost per request still counts, but lower the rate for a fair side-by-side run`,
    );
  }
}
