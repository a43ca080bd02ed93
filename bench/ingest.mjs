// Ingest throughput of the whole chain (verify, parse, normalize, dedup, debounce, outbox, emit)
// against bare Koa + @koa/router parsing the same JSON, and against the naive baseline (the design documents' algorithm) on
// the same Koa (bench/naive-baseline.mjs), side by side in one run.
// Every request is a new session with a new id, so nothing is deduplicated or merged away.
//
// This VM's speed shifts in steps: bare Koa alone, under one unchanged load, reads ~10,000 req/s
// for ten seconds and ~20,000 for the next ten. A server measured 20 s after bare Koa can be
// measured in another regime, and one run of the earlier layout (each server started, warmed
// 2 s and measured 5 s in turn) read the naive baseline at 1.40x of bare Koa. So every server is
// started once and stays up, and the load moves between them in short slices, each server's
// slice between two slices of bare Koa ("bare, A, bare, B, bare, C, bare", the order of A, B, C
// rotated per round): a server's ratio in a round is its req/s over the mean of the two bare
// Koa slices around it, a few seconds away on either side. The ratio reported is the median of
// the rounds, with their range. (Over the higher of the two instead, a stricter reading, one
// run read every ratio about a tenth lower: see docs/benchmarks.md.)
//
// A slice is WARM seconds of load, not counted, then `seconds` counted. The warm part covers
// the debounce window: the buffers a slice opens flush 1.5 s later, while the next server's
// warm part runs, so each counted part carries the flushes of its own load (steady state) and
// none of another server's.
//
// A slice counts only when the server, not autocannon, set the pace: on a small machine the
// load generator can run out of CPU first (bare Koa then shows part of its real capacity while
// a slower server is unaffected, and the ratio creeps toward 1), so each slice also reads how
// busy the server's main thread was (Linux: /proc), and a round is counted only when both bare
// Koa slices around a server had its main thread busy at least BUSY of the wall time.
// BENCH_SEQUENTIAL=1 runs the earlier layout instead, for comparison. BENCH_TRAFFIC=telegram sends
// Telegram updates to a Telegram channel instead of generic webhooks (bench/traffic.mjs).
// Usage: node bench/ingest.mjs [seconds=3] [connections=50] [rounds=6]
import autocannon from 'autocannon';
import { bracketed, cpuTicks, median, start, targets, traffic, trafficLoad } from './servers.mjs';

const seconds = Number(process.argv[2] ?? 3);
const connections = Number(process.argv[3] ?? 50);
const rounds = Number(process.argv[4] ?? 6);
const WARM = 2;
const BUSY = 0.85;

const load = (url, duration, tag) => autocannon({ ...trafficLoad(url, tag), connections, duration });

/** One slice on a running server: warm, then measure; req/s, p99 and how busy its main thread was. */
async function slice(server, measured) {
  const tag = `${server.pid}-${Date.now()}`;
  await load(server.url, WARM, `${tag}-w`);
  const before = cpuTicks(server.pid).main;
  const startedAt = performance.now();
  const result = await load(server.url, measured, tag);
  // A tick is 10 ms.
  const busy = ((cpuTicks(server.pid).main - before) * 10) / (performance.now() - startedAt);
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx, busy };
}

const [bareTarget, ...others] = targets;
const runs = new Map(others.map(([name]) => [name, []]));
const bareRuns = [];
if (process.env.BENCH_SEQUENTIAL === '1') {
  // The earlier layout: each server started, warmed and measured in turn, one after another.
  for (let round = 0; round < rounds; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length]);
    const measured = new Map();
    for (const target of order) {
      const server = await start(target);
      measured.set(target[0], await slice(server, seconds));
      server.stop();
    }
    const bare = measured.get(bareTarget[0]);
    bareRuns.push(bare);
    for (const [name] of others)
      runs
        .get(name)
        .push({ ...measured.get(name), ratio: measured.get(name).rps / bare.rps, counted: bare.busy >= BUSY });
  }
} else {
  const bare = await start(bareTarget);
  const servers = [];
  for (const target of others) servers.push(await start(target));
  try {
    await bracketed(bare, servers, rounds, (server) => slice(server, seconds), {
      onBare: (run) => bareRuns.push(run),
      onServer: (server, own, before, after) =>
        runs.get(server.name).push({
          ...own,
          ratio: own.rps / ((before.rps + after.rps) / 2),
          counted: before.busy >= BUSY && after.busy >= BUSY,
        }),
    });
  } finally {
    bare.stop();
    for (const server of servers) server.stop();
  }
}

const layout =
  process.env.BENCH_SEQUENTIAL === '1'
    ? `${rounds} rounds, each server started, warmed ${WARM}s and measured ${seconds}s in turn (BENCH_SEQUENTIAL=1)`
    : `${rounds} rounds of slices (${WARM}s warm + ${seconds}s counted), each server's between two of bare Koa`;
console.log(
  `\ningest, ${layout}, ${connections} connections, ${traffic} webhooks, every request a new session (node ${process.version})`,
);
console.log(
  `| server | median req/s | vs bare Koa (median of counted rounds) | range | rounds counted | p99 ms | errors | each round: req/s (main thread busy) |\n|---|---:|---:|---:|---:|---:|---:|---|`,
);
const fmt = (x, flag = '') => `${Math.round(x.rps)} (${Math.round(x.busy * 100)}%)${flag}`;
console.log(
  `| ${bareTarget[0]} | ${Math.round(median(bareRuns.map((x) => x.rps)))} | 1.00x | | | ${median(bareRuns.map((x) => x.p99))} | ${bareRuns.reduce((a, x) => a + x.errors, 0)} | ${bareRuns.map((x) => fmt(x)).join(', ')} |`,
);
let uncounted = false;
for (const [name, r] of runs) {
  const counted = r.filter((x) => x.counted);
  const used = counted.length > 0 ? counted : r;
  if (counted.length < r.length) uncounted = true;
  const ratios = used.map((x) => x.ratio);
  console.log(
    `| ${name} | ${Math.round(median(r.map((x) => x.rps)))} | ${median(ratios).toFixed(2)}x | ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} | ${counted.length} of ${r.length} | ${median(r.map((x) => x.p99))} | ${r.reduce((a, x) => a + x.errors, 0)} | ${r.map((x) => fmt(x, x.counted ? '' : '*')).join(', ')} |`,
  );
}
if (uncounted) {
  console.log(
    bareRuns.some((x) => x.busy >= BUSY)
      ? `* not counted: a bare Koa slice next to it had its main thread under ${BUSY * 100}% busy, so autocannon, not the server, set the pace`
      : `note: bare Koa's main thread never reached ${BUSY * 100}% busy; every round is counted, and the ratios understate the gap`,
  );
}
