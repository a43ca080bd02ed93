// Ingest cost per request: CPU the server spends on one webhook, for every server of
// bench/servers.mjs at once. All servers run side by side and get the same fixed request rate
// at the same time, so the minute-to-minute speed swings of a shared VM hit them all alike
// (bench/ingest.mjs measures throughput one server after another and sees those swings).
// Each request is a new message of a new session, so every one is buffered, waits out the
// debounce window and is flushed to the outbox. Under saturation the server's main thread is
// the bottleneck, so bare Koa's main-thread cost divided by a server's is the throughput ratio
// that cost allows. CPU is read from /proc (Linux): the main thread alone, and all threads.
// Usage: node bench/ingest-cost.mjs [rate per server=1500] [seconds=8] [rounds=3]
import autocannon from 'autocannon';
import { cpuTicks, median, newSessionRequests, start, targets } from './servers.mjs';

const rate = Number(process.argv[2] ?? 1500);
const seconds = Number(process.argv[3] ?? 8);
const rounds = Number(process.argv[4] ?? 3);

const load = (server, duration) => autocannon({
  url: `${server.url}/webhooks/generic`, connections: 10, duration, overallRate: rate, method: 'POST',
  headers: { 'content-type': 'application/json' }, requests: newSessionRequests(`${server.pid}-${Date.now()}`),
});

const rows = new Map(targets.map(([name]) => [name, []]));
for (let round = 0; round < rounds; round++) {
  const servers = [];
  for (const target of targets) servers.push(await start(target));
  await Promise.all(servers.map((server) => load(server, 2))); // warm-up
  const before = servers.map((server) => cpuTicks(server.pid));
  const results = await Promise.all(servers.map((server) => load(server, seconds)));
  servers.forEach((server, i) => {
    const after = cpuTicks(server.pid);
    const n = results[i].requests.total;
    // A tick is 10 ms = 10,000 µs.
    rows.get(server.name).push({
      main: ((after.main - before[i].main) * 10_000) / n, all: ((after.all - before[i].all) * 10_000) / n,
      n, errors: results[i].errors + results[i].non2xx, p99: results[i].latency.p99,
    });
    server.stop();
  });
}

const bare = rows.get(targets[0][0]);
console.log(`\ningest cost, all servers side by side at ${rate} req/s each for ${seconds}s, median of ${rounds} rounds, every request a new session (node ${process.version})`);
console.log('| server | main thread µs/req | all threads µs/req | bare Koa main ÷ this (median of rounds) | requests | errors | p99 ms |\n|---|---:|---:|---:|---:|---:|---:|');
for (const [name] of targets) {
  const r = rows.get(name);
  const ratios = r.map((x, i) => bare[i].main / x.main);
  console.log(`| ${name} | ${median(r.map((x) => x.main)).toFixed(1)} | ${median(r.map((x) => x.all)).toFixed(1)} | ${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) | ${r.reduce((a, x) => a + x.n, 0)} | ${r.reduce((a, x) => a + x.errors, 0)} | ${median(r.map((x) => x.p99))} |`);
}
const expected = rate * seconds * rounds;
for (const [name] of targets) {
  const sent = rows.get(name).reduce((a, x) => a + x.n, 0);
  if (sent < expected * 0.9) console.log(`note: ${name} got ${sent} of ${expected} requests; the machine could not hold ${rate}/s for every server, lower the rate`);
}
