// Ingest throughput of the whole chain (verify, parse, normalize, dedup, debounce, outbox, emit)
// against bare Koa + koa-router parsing the same JSON, side by side in one run.
// Every request is a new session with a new id, so nothing is deduplicated or merged away.
// This VM's throughput drifts by tens of percent from minute to minute, so targets are run in
// rounds, in rotated order; each round compares the servers it measured back to back, and the
// ratio to bare Koa is the median of those per-round ratios (with their range).
// Usage: node bench/ingest.mjs [seconds=8] [connections=50] [rounds=5]
import autocannon from 'autocannon';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const seconds = Number(process.argv[2] ?? 8);
const connections = Number(process.argv[3] ?? 50);
const rounds = Number(process.argv[4] ?? 5);
const root = new URL('..', import.meta.url).pathname;

async function start(name, script, env) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const dir = mkdtempSync(join(tmpdir(), 'intake-bench-'));
  const child = fork(join(root, script), [], { cwd: dir, env: { PATH: process.env.PATH, PORT: String(port), LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status < 500, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name, url: `http://127.0.0.1:${port}`, stop: () => { child.kill('SIGKILL'); rmSync(dir, { recursive: true, force: true }); } };
}

function load(url, duration) {
  let n = 0;
  return autocannon({
    url: `${url}/webhooks/generic`, connections, duration, method: 'POST',
    headers: { 'content-type': 'application/json' },
    requests: [{
      setupRequest(request) {
        n++;
        request.body = JSON.stringify({ id: `bench-${process.pid}-${n}`, sessionKey: `bench:user-${n}`, sender: { id: `u${n}`, name: 'Bench' }, content: `帮我查一下订单 ORD-${n} 的状态`, timestamp: 1710234567 });
        return request;
      },
    }],
  });
}

const targets = [
  ['bare Koa + koa-router', 'bench/bare-koa.mjs', {}],
  ['agent-intake, memory store', 'dist/main.js', { INTAKE_STORE: 'memory' }],
  ['agent-intake, sqlite store', 'dist/main.js', { INTAKE_STORE: 'sqlite:./bench.db' }],
];
const runs = new Map(targets.map(([name]) => [name, []]));
for (let round = 0; round < rounds; round++) {
  const order = targets.map((_, i) => targets[(i + round) % targets.length]);
  for (const [name, script, env] of order) {
    const server = await start(name, script, env);
    await load(server.url, 2); // warm-up
    const result = await load(server.url, seconds);
    server.stop();
    runs.get(name).push({ rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx });
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const baseline = runs.get(targets[0][0]);
const results = targets.map(([name]) => {
  const r = runs.get(name);
  const ratios = r.map((x, round) => x.rps / baseline[round].rps);
  return {
    name, rps: median(r.map((x) => x.rps)), p99: median(r.map((x) => x.p99)), errors: r.reduce((a, x) => a + x.errors, 0),
    ratio: median(ratios), low: Math.min(...ratios), high: Math.max(...ratios), all: r.map((x) => Math.round(x.rps)),
  };
});
console.log(`\ningest, ${rounds} rounds of ${seconds}s x ${connections} connections, every request a new session (node ${process.version})`);
console.log('| server | median req/s | vs bare Koa (median of rounds) | range over rounds | p99 ms | errors | each round req/s |\n|---|---:|---:|---:|---:|---:|---|');
for (const r of results) console.log(`| ${r.name} | ${Math.round(r.rps)} | ${r.ratio.toFixed(2)}x | ${r.low.toFixed(2)}–${r.high.toFixed(2)} | ${r.p99} | ${r.errors} | ${r.all.join(', ')} |`);
