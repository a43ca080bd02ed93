// Garbage-collector cost per request, for every server of bench/servers.mjs at one fixed rate:
// bytes allocated per request, bytes that survive a young-generation collection (scavenge) per
// request, and the scavenges' pauses. A scavenge holds every request behind it, so its pause
// sets much of the ack p99 (bench/latency.mjs); and unlike time, bytes allocated per request
// hardly move with the machine's speed, so this measures an allocation cut reliably.
// Read from V8's own trace (`node --trace-gc-nvp`): `allocated` (bytes since the previous
// collection) and `new_space_survived` of each collection inside the measured window.
// One server at a time (rotated order per round), each warmed up first.
// Usage: node bench/gc.mjs [rate=2000] [seconds=6] [rounds=2]
import autocannon from 'autocannon';
import { gcLine, median, newSessionRequests, start, targets } from './servers.mjs';

const rate = Number(process.argv[2] ?? 2000);
const seconds = Number(process.argv[3] ?? 6);
const rounds = Number(process.argv[4] ?? 2);

const drive = (server, duration) =>
  autocannon({
    url: `${server.url}/webhooks/generic`,
    duration,
    method: 'POST',
    connections: 20,
    overallRate: rate,
    headers: { 'content-type': 'application/json' },
    requests: newSessionRequests(`${server.pid}-${Date.now()}`),
  });

const runs = new Map(targets.map(([name]) => [name, []]));
for (let round = 0; round < rounds; round++) {
  const order = targets.map((_, i) => targets[(i + round) % targets.length]);
  for (const target of order) {
    let text = '';
    const server = await start(target, {
      execArgv: ['--trace-gc-nvp'],
      onStdout: (chunk) => {
        text += chunk;
      },
    });
    await drive(server, 2); // warm-up: compilation, and the young generation grown to its working size
    const mark = text.length;
    const result = await drive(server, seconds);
    const window = text.slice(mark);
    server.stop();
    const gcs = window.split('\n').map(gcLine).filter(Boolean);
    const scavenges = gcs.filter((gc) => gc.gc === 's');
    const pauses = scavenges.map((gc) => Number(gc.pause));
    const requests = result['2xx'];
    runs.get(target[0]).push({
      requests,
      allocatedKb: gcs.reduce((a, gc) => a + Number(gc.allocated ?? 0), 0) / requests / 1024,
      survivedKb: scavenges.reduce((a, gc) => a + Number(gc.new_space_survived ?? 0), 0) / requests / 1024,
      perSecond: scavenges.length / seconds,
      meanPause: pauses.reduce((a, b) => a + b, 0) / Math.max(1, pauses.length),
      maxPause: Math.max(0, ...pauses),
      majors: gcs.length - scavenges.length,
      gcMsPerS: gcs.reduce((a, gc) => a + Number(gc.pause), 0) / seconds,
    });
  }
}

const f = (x, d = 1) => x.toFixed(d);
console.log(
  `\nGC per request at ${rate} req/s, ${rounds} rounds of ${seconds}s, one server at a time, every request a new session (node ${process.version}; medians)`,
);
console.log(
  '| server | KB allocated / request | KB surviving a scavenge / request | scavenges / s | scavenge pause ms, mean (max) | major GCs | GC pause ms / s |\n|---|---:|---:|---:|---:|---:|---:|',
);
for (const [name] of targets) {
  const r = runs.get(name);
  const m = (key) => median(r.map((x) => x[key]));
  console.log(
    `| ${name} | ${f(m('allocatedKb'))} | ${f(m('survivedKb'), 2)} | ${f(m('perSecond'))} | ${f(m('meanPause'), 2)} (${f(Math.max(...r.map((x) => x.maxPause)))}) | ${m('majors')} | ${f(m('gcMsPerS'))} |`,
  );
}
