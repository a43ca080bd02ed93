// SSE fan-out: what live /v1/events clients cost the webhooks' acknowledgements. One service
// (memory store) takes a steady webhook load while N clients follow /v1/events; the same load
// with no client is the baseline, in the same run. Each output is framed once and the same
// bytes are written to every client (src/http/event-stream.ts); what grows with N is the
// writes, one per client per output.
// Usage: node bench/sse-fanout.mjs [rate=300] [seconds=5] [clients=0,100,300,600]
import http from 'node:http';
import os from 'node:os';
import { cpuTicks, paced, start } from './servers.mjs';

const rate = Number(process.argv[2] ?? 300);
const seconds = Number(process.argv[3] ?? 5);
const counts = (process.argv[4] ?? '0,100,300,600').split(',').map(Number);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** N clients on /v1/events, each counting the outputs it received. */
function follow(url, n) {
  const received = new Array(n).fill(0);
  const requests = [];
  let opened = 0;
  const ready = new Promise((resolve, reject) => {
    if (n === 0) resolve();
    for (let i = 0; i < n; i++) {
      const req = http.get(`${url}/v1/events`, { headers: { accept: 'text/event-stream' }, agent: false }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream ${i}: ${res.statusCode}`));
        if (++opened === n) resolve();
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          received[i] +=
            chunk.split('\nevent: chat.processedMessage\n').length -
            1 +
            (chunk.startsWith('event: chat.processedMessage\n') ? 1 : 0);
        });
      });
      req.on('error', () => undefined);
      requests.push(req);
    }
  });
  return {
    ready,
    received,
    close: () => {
      for (const req of requests) req.destroy();
    },
  };
}

console.log(
  `\n# SSE fan-out: ${os.availableParallelism()} cores, node ${process.version}, ${rate} webhooks/s for ${seconds} s, each a new session (one output each)`,
);
console.log(
  '| live /v1/events clients | ack p50 ms | ack p99 ms | service CPU µs per webhook | outputs each client received (min / expected) |\n|---:|---:|---:|---:|---|',
);
for (const n of counts) {
  const server = await start([
    'agent-intake, memory store',
    'dist/main.js',
    {
      INTAKE_STORE: 'memory',
      INTAKE_DEBOUNCE_WINDOW_MS: '50',
      INTAKE_EVENTS_MAX_STREAMS: String(Math.max(n, 1)),
      INTAKE_MAX_CONNECTIONS: String(n + 200),
    },
  ]);
  const clients = follow(server.url, n);
  await clients.ready;
  await paced(server, { rate, seconds: 1, tag: `warm-${n}` });
  await sleep(500);
  const base = clients.received.slice();
  const before = cpuTicks(server.pid);
  const result = await paced(server, { rate, seconds, tag: `run-${n}` });
  await sleep(1500);
  const cpu = ((cpuTicks(server.pid).all - before.all) * 10_000) / result.total;
  const got = clients.received.map((count, i) => count - base[i]);
  console.log(
    `| ${n} | ${result.p50.toFixed(1)} | ${result.p99.toFixed(1)} | ${cpu.toFixed(0)} | ${n ? Math.min(...got) : '–'} / ${result.ok} |`,
  );
  clients.close();
  server.stop();
}
process.exit(0);
