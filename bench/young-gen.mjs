// Does the ack p99 follow the length of a young-generation collection (scavenge)? Every message
// waits out the debounce window, so each scavenge copies the messages of the last interval; a
// smaller young generation makes scavenges shorter and more frequent. This runs the memory-store
// service at one fixed rate with V8's semi-space capped at several sizes (`--max-semi-space-size`,
// MB; "default" is V8's own) and reads, side by side, the mean and max scavenge pause (from
// `--trace-gc-nvp`) and the exact ack percentiles. If the p99 followed the pause, it would fall
// with the cap. The service itself sets no GC flag: this is a measurement, not a setting.
// One server at a time, caps rotated over rounds, each warmed up first; medians over rounds.
// Usage: node bench/young-gen.mjs [rate=4000] [seconds=6] [rounds=2] [caps=default,8,4,2]
import autocannon from 'autocannon';
import { gcLine, median, newSessionRequests, start } from './servers.mjs';

const rate = Number(process.argv[2] ?? 4000);
const seconds = Number(process.argv[3] ?? 6);
const rounds = Number(process.argv[4] ?? 2);
const caps = (process.argv[5] ?? 'default,8,4,2').split(',');

const drive = (server, duration, onResponse) => {
  const run = autocannon({
    url: `${server.url}/webhooks/generic`,
    duration,
    method: 'POST',
    connections: 20,
    overallRate: rate,
    headers: { 'content-type': 'application/json' },
    requests: newSessionRequests(`${server.pid}-${Date.now()}`),
  });
  if (onResponse) run.on('response', onResponse);
  return run;
};

const runs = new Map(caps.map((cap) => [cap, []]));
for (let round = 0; round < rounds; round++) {
  for (let i = 0; i < caps.length; i++) {
    const cap = caps[(i + round) % caps.length];
    let text = '';
    const execArgv = ['--trace-gc-nvp', ...(cap === 'default' ? [] : [`--max-semi-space-size=${cap}`])];
    const server = await start(['agent-intake, memory store', 'dist/main.js', { INTAKE_STORE: 'memory' }], {
      execArgv,
      onStdout: (chunk) => {
        text += chunk;
      },
    });
    await drive(server, 2); // warm-up: compilation, and the young generation grown to its working size
    const mark = text.length;
    const times = [];
    const result = await drive(server, seconds, (_client, status, _bytes, ms) => {
      if (status < 300) times.push(ms);
    });
    const pauses = text
      .slice(mark)
      .split('\n')
      .map(gcLine)
      .filter((gc) => gc?.gc === 's')
      .map((gc) => Number(gc.pause));
    server.stop();
    times.sort((a, b) => a - b);
    const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? NaN;
    runs.get(cap).push({
      got: result.requests.total / seconds,
      scavenges: pauses.length / seconds,
      meanPause: pauses.reduce((a, b) => a + b, 0) / Math.max(1, pauses.length),
      maxPause: Math.max(0, ...pauses),
      p50: at(0.5),
      p99: at(0.99),
      p999: at(0.999),
    });
  }
}

const f = (x, d = 2) => x.toFixed(d);
console.log(
  `\nyoung generation cap against ack latency, memory store at ${rate} req/s, ${rounds} rounds of ${seconds}s, every request a new session (node ${process.version}; medians, p99 range)`,
);
console.log(
  '| semi-space cap (MB) | req/s held | scavenges / s | scavenge pause ms, mean (max) | ack p50 ms | ack p99 ms (range) | ack p99.9 ms |\n|---|---:|---:|---:|---:|---:|---:|',
);
for (const cap of caps) {
  const r = runs.get(cap);
  const m = (key) => median(r.map((x) => x[key]));
  const p99s = r.map((x) => x.p99);
  console.log(
    `| ${cap} | ${f(m('got'), 0)} | ${f(m('scavenges'), 1)} | ${f(m('meanPause'))} (${f(Math.max(...r.map((x) => x.maxPause)), 1)}) | ${f(m('p50'))} | ${f(m('p99'))} (${f(Math.min(...p99s))}–${f(Math.max(...p99s))}) | ${f(m('p999'))} |`,
  );
}
