// Discord MESSAGE_CREATE dispatches over ONE Gateway socket into agent-intake, against the same
// messages as HTTP webhooks (the generic channel, autocannon over keep-alive connections), side
// by side in one run: one agent-intake child process with both channels, a fake Gateway in this
// process that keeps its socket saturated (sends while `bufferedAmount` is under HIGH bytes).
// Each round gives each path a slice (WARM s, then `seconds` counted), the order rotated. Every
// message is a new session. Events/s and outputs/s are the server's own counters
// (/v1/stats channels.<id>.received and .emitted) over the counted part.
// Usage: node bench/gateway.mjs [seconds=5] [rounds=3]
import autocannon from 'autocannon';
import { WebSocketServer } from 'ws';
import { median, newSessionRequests, start } from './servers.mjs';

const seconds = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 3);
const WARM = 2;
const HIGH = 256 * 1024;
const TOKEN = 'bench-discord-token';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The fake Gateway: Hello, READY on Identify, ACKs, and a flood of dispatches while `flooding`.
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await new Promise((resolve) => wss.once('listening', resolve));
const gatewayUrl = `ws://127.0.0.1:${wss.address().port}`;
let socket;
let seq = 0;
let flooding = false;
wss.on('connection', (ws) => {
  socket = ws;
  ws.send(JSON.stringify({ op: 10, d: { heartbeat_interval: 41_250 } }));
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.op === 1) ws.send(JSON.stringify({ op: 11 }));
    if (frame.op === 2)
      ws.send(
        JSON.stringify({
          op: 0,
          s: ++seq,
          t: 'READY',
          d: { user: { id: '1' }, session_id: 's1', resume_gateway_url: gatewayUrl },
        }),
      );
  });
});
const now = new Date().toISOString();
const dispatch = (n) =>
  JSON.stringify({
    op: 0,
    s: ++seq,
    t: 'MESSAGE_CREATE',
    d: {
      id: `9${n}`,
      channel_id: `c${n}`,
      author: { id: `u${n}`, username: 'bench' },
      content: `帮我查一下订单 ORD-${n} 的状态`,
      timestamp: now,
      mentions: [],
      attachments: [],
      embeds: [],
    },
  });
let sent = 0;
async function flood() {
  while (flooding) {
    while (flooding && socket.bufferedAmount < HIGH) socket.send(dispatch(++sent));
    await sleep(1);
  }
}

const config = JSON.stringify({
  channels: [
    { id: 'generic', adapter: 'generic' },
    { id: 'dc', adapter: 'discord', botToken: TOKEN, gatewayUrl },
  ],
});
const { writeFileSync, mkdtempSync } = await import('node:fs');
const { join } = await import('node:path');
const { tmpdir } = await import('node:os');
const configPath = join(mkdtempSync(join(tmpdir(), 'intake-gateway-')), 'intake.config.json');
writeFileSync(configPath, config);
const server = await start(['agent-intake', 'dist/main.js', { INTAKE_STORE: 'memory', INTAKE_CONFIG: configPath }]);
for (let i = 0; i < 100 && !socket; i++) await sleep(50);
if (!socket) throw new Error('agent-intake did not connect to the fake Gateway');
const counts = async (channel) => {
  const stats = await (await fetch(`${server.url}/v1/stats`)).json();
  return { received: stats.channels[channel]?.received ?? 0, emitted: stats.channels[channel]?.emitted ?? 0 };
};

async function slice(path) {
  const channel = path === 'gateway' ? 'dc' : 'generic';
  const run =
    path === 'gateway'
      ? (() => {
          flooding = true;
          void flood();
          return async () => {
            flooding = false;
          };
        })()
      : (() => {
          const load = autocannon({
            url: `${server.url}/webhooks/generic`,
            method: 'POST',
            connections: 32,
            duration: WARM + seconds + 1,
            headers: { 'content-type': 'application/json' },
            requests: newSessionRequests(`gw-${Date.now()}`),
          });
          return async () => {
            load.stop();
            await load;
          };
        })();
  await sleep(WARM * 1000);
  const before = await counts(channel);
  await sleep(seconds * 1000);
  const after = await counts(channel);
  await run();
  await sleep(3000); // let the debounce flush what is left before the next slice
  return { events: (after.received - before.received) / seconds, outputs: (after.emitted - before.emitted) / seconds };
}

const results = { gateway: [], http: [] };
for (let round = 0; round < rounds; round++) {
  for (const path of round % 2 === 0 ? ['gateway', 'http'] : ['http', 'gateway']) results[path].push(await slice(path));
}
server.stop();
wss.close();
const fmt = (values) =>
  `${median(values).toFixed(0)} (${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)})`;
const ratio = results.gateway.map((g, i) => g.outputs / results.http[i].outputs);
console.log(`Discord Gateway vs HTTP webhooks, ${seconds}s x ${rounds} rounds, Node ${process.version}`);
console.log('| path | events/s | outputs/s |');
console.log('|---|---:|---:|');
for (const path of ['gateway', 'http'])
  console.log(
    `| ${path === 'gateway' ? 'one Gateway socket (discord)' : 'HTTP webhooks, 32 connections (generic)'} | ${fmt(results[path].map((r) => r.events))} | ${fmt(results[path].map((r) => r.outputs))} |`,
  );
console.log(
  `Gateway ÷ HTTP, outputs/s: ${fmt(ratio.map((r) => r * 100)).replace(/(\d+)/g, (n) => (Number(n) / 100).toFixed(2))}x`,
);
