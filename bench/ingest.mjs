// Ingest throughput of the whole chain (verify, parse, normalize, dedup, debounce, outbox, emit)
// against bare Koa + koa-router parsing the same JSON, and against the seed's naive sketches on
// the same Koa (bench/seed-sketch.mjs), side by side in one run.
// Every request is a new session with a new id, so nothing is deduplicated or merged away.
// This VM's throughput drifts by tens of percent from minute to minute, so targets are run in
// rounds, in rotated order; each round compares the servers it measured back to back, and the
// ratio to bare Koa is the median of those per-round ratios (with their range). Linux: the
// server's CPU is read from /proc.
// Usage: node bench/ingest.mjs [seconds=8] [connections=50] [rounds=5]
import autocannon from 'autocannon';
import { cpuTicks, median, newSessionRequests, start, targets } from './servers.mjs';

const seconds = Number(process.argv[2] ?? 8);
const connections = Number(process.argv[3] ?? 50);
const rounds = Number(process.argv[4] ?? 5);

const load = (url, duration) => autocannon({
  url: `${url}/webhooks/generic`, connections, duration, method: 'POST',
  headers: { 'content-type': 'application/json' }, requests: newSessionRequests(`${process.pid}-${Date.now()}`),
});

// A round measures the servers only when they, not autocannon, set the pace. On a small machine
// the load generator can run out of CPU first (bare Koa then shows half its real capacity while
// a slower server is unaffected, and the ratio creeps toward 1), so each run also reads how
// busy the server's main thread was, and ratios are taken over the rounds where bare Koa's
// main thread was saturated (at least BUSY of the wall time).
const BUSY = 0.85;
const runs = new Map(targets.map(([name]) => [name, []]));
for (let round = 0; round < rounds; round++) {
  const order = targets.map((_, i) => targets[(i + round) % targets.length]);
  for (const target of order) {
    const server = await start(target);
    await load(server.url, 2); // warm-up
    const before = cpuTicks(server.pid).main;
    const startedAt = performance.now();
    const result = await load(server.url, seconds);
    // A tick is 10 ms.
    const busy = ((cpuTicks(server.pid).main - before) * 10) / (performance.now() - startedAt);
    server.stop();
    runs.get(target[0]).push({ rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx, busy });
  }
}
const baseline = runs.get(targets[0][0]);
const saturated = baseline.map((x) => x.busy >= BUSY);
const counted = saturated.some(Boolean) ? saturated : saturated.map(() => true);
const results = targets.map(([name]) => {
  const r = runs.get(name);
  const ratios = r.map((x, round) => x.rps / baseline[round].rps).filter((_, round) => counted[round]);
  return {
    name, rps: median(r.map((x) => x.rps)), p99: median(r.map((x) => x.p99)), errors: r.reduce((a, x) => a + x.errors, 0),
    ratio: median(ratios), low: Math.min(...ratios), high: Math.max(...ratios),
    all: r.map((x, round) => `${Math.round(x.rps)} (${Math.round(x.busy * 100)}%)${counted[round] ? '' : '*'}`),
  };
});
const used = counted.filter(Boolean).length;
console.log(`\ningest, ${rounds} rounds of ${seconds}s x ${connections} connections, every request a new session (node ${process.version})`);
console.log(`| server | median req/s | vs bare Koa (median of ${used} saturated rounds) | range | p99 ms | errors | each round: req/s (server main thread busy) |\n|---|---:|---:|---:|---:|---:|---|`);
for (const r of results) console.log(`| ${r.name} | ${Math.round(r.rps)} | ${r.ratio.toFixed(2)}x | ${r.low.toFixed(2)}–${r.high.toFixed(2)} | ${r.p99} | ${r.errors} | ${r.all.join(', ')} |`);
if (used < rounds) {
  console.log(saturated.some(Boolean)
    ? `* not counted: bare Koa's main thread was under ${BUSY * 100}% busy, so autocannon, not the server, set the pace`
    : `note: bare Koa's main thread never reached ${BUSY * 100}% busy; every round is counted, and the ratios understate the gap`);
}
