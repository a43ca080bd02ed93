// OneBot v11 events over ONE reverse WebSocket into agent-intake, against the same events as
// signed HTTP webhooks (autocannon, keep-alive), and against a bare `ws` server that only
// JSON.parses each frame (the limit), side by side in one run: each setup in a child process of
// its own, started once; per round each gets a slice (WARM s of load, then `seconds` counted), the
// order rotated per round. Every event is a new session (distinct user_id and message_id).
// The WebSocket sender keeps one socket saturated without unbounded buffering: it sends while
// `bufferedAmount` is under HIGH bytes, else waits a millisecond. Events/s are what the server
// counted (/v1/stats channels.<id>.received, read at both ends of the counted part), not what the
// client sent; after each slice the load stops and the server must settle at received == sent.
// Outputs/s is what left the debounce for the outbox in the same counted part (channels.<id>.emitted;
// every event is a new session, so one output each): under a steady load it must keep up with
// the events, else the figure counts admissions whose flush was only put off.
// Also read per slice, from /proc: the server's main-thread and all-thread CPU per event, how busy
// its main thread was, and how busy the sender (this process) was: if the sender is the busier
// one, it set the pace.
// Then memory per idle connection: a fresh child (--expose-gc) of agent-intake and of the bare
// server, RSS and heapUsed after gc() before and after opening CONNS authenticated sockets (one
// X-Self-ID each), then all closed: /v1/connections must list them closed and /healthz answer 200.
// The service's server.maxConnections (default 1000) counts upgraded sockets too, so the
// agent-intake child here allows CONNS + 100.
// BENCH_COMPARE=<folder with the dist/ of another build> adds that build's WebSocket row, in the
// same rounds (for example node_modules/.cache/intake-<commit>).
// Usage: node bench/sockets.mjs [seconds=5] [rounds=3]
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { cpuNs, median, start } from './servers.mjs';
import { fromDist } from './dist.mjs';

const WARM = 2;
const HIGH = 256 * 1024;
const HTTP_CONNECTIONS = 32;
const CONNS = 1000;
const TOKEN = 'tok';
const SECRET = 's';
const SELF_ID = 10001000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The server side: agent-intake built from dist/ and listened as dist/main.js does, or bare ws. */
async function child(role) {
  const port = Number(process.env.PORT);
  process.on('message', () => {
    for (let i = 0; i < 2; i++) globalThis.gc?.();
    const { rss, heapUsed } = process.memoryUsage();
    process.send({ mem: { rss, heapUsed } });
  });
  const { WebSocketServer } = await import('ws');
  if (role === 'bare') {
    const { createServer } = await import('node:http');
    let received = 0;
    const server = createServer((req, res) =>
      res.end(
        JSON.stringify(req.url === '/v1/stats' ? { channels: { qq: { received, emitted: received } } } : { ok: true }),
      ),
    );
    const wss = new WebSocketServer({ noServer: true, clientTracking: false, maxPayload: 1_048_576 });
    server.on('upgrade', (req, socket, head) =>
      wss.handleUpgrade(req, socket, head, (ws) =>
        ws.on('message', (data) => {
          JSON.parse(data.toString());
          received++;
        }),
      ),
    );
    server.listen(port, '127.0.0.1');
    return;
  }
  const { default: pino } = await import('pino');
  const dist = process.env.BENCH_SOCKETS_DIST ?? new URL('../dist', import.meta.url).pathname;
  const { createIntake } = await fromDist(dist, 'service/intake.js');
  const { listen } = await import(join(dist, 'http/server.js'));
  const logger = pino({ level: 'warn' });
  const intake = await createIntake({
    configFile: {
      store: 'memory',
      logLevel: 'warn',
      server: { port, maxConnections: CONNS + 100 },
      channels: [
        { id: 'qq', adapter: 'onebot', transport: 'ws-reverse', accessToken: TOKEN },
        { id: 'qqh', adapter: 'onebot', secret: SECRET },
      ],
    },
    env: {},
    logger,
    cwd: process.cwd(),
  });
  const server = await listen(intake.app.callback(), intake.config, logger);
  server.on('upgrade', (req, socket, head) => {
    if (!intake.upgrade(req, socket, head)) socket.destroy();
  });
}

/** OneBot v11 private message `n`: message_id and user_id n, so a new session every time. */
const frame = (n, time) =>
  `{"time":${time},"self_id":${SELF_ID},"post_type":"message","message_type":"private","sub_type":"friend","message_id":${n},"user_id":${n},"sender":{"user_id":${n},"nickname":"u"},"message":[{"type":"text","data":{"text":"hello ${n}"}}],"raw_message":"hello ${n}"}`;
let next = 100_000_000;

async function connect(url, selfId) {
  const { default: WebSocket } = await import('ws');
  const socket = new WebSocket(`${url.replace('http', 'ws')}/webhooks/qq`, {
    headers: { authorization: `Bearer ${TOKEN}`, 'x-self-id': String(selfId), 'x-client-role': 'Universal' },
  });
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
    socket.once('unexpected-response', (_req, res) => reject(new Error(`handshake refused: ${res.statusCode}`)));
  });
  return socket;
}

const counts = async (server, channel) => {
  const counted = (await (await fetch(`${server.url}/v1/stats`)).json()).channels[channel];
  return { received: counted?.received ?? 0, emitted: counted?.emitted ?? 0 };
};
const stats = async (server, channel) => (await counts(server, channel)).received;

/** Counters at one moment: what the server received, its CPU, ours. */
async function mark(server, channel) {
  const { received, emitted } = await counts(server, channel);
  return { received, emitted, at: performance.now(), cpu: cpuNs(server.pid), own: process.cpuUsage() };
}

/** Load running: wait WARM s, count `seconds`. */
async function counted(server, channel, seconds) {
  await sleep(WARM * 1000);
  const a = await mark(server, channel);
  await sleep(seconds * 1000);
  const b = await mark(server, channel);
  const events = b.received - a.received;
  const wall = (b.at - a.at) * 1000; // µs
  const own = process.cpuUsage(a.own);
  return {
    rps: events / (wall / 1e6),
    outputs: (b.emitted - a.emitted) / (wall / 1e6),
    main: (b.cpu.main - a.cpu.main) / 1000 / events,
    all: (b.cpu.all - a.cpu.all) / 1000 / events,
    busy: (b.cpu.main - a.cpu.main) / 1000 / wall,
    sender: (own.user + own.system) / wall,
  };
}

/** After the load: wait (up to 20 s) for the server to have received `want`; what it has. */
async function settled(server, channel, want) {
  let got = await stats(server, channel);
  for (let i = 0; i < 200 && got < want; i++) got = await sleep(100).then(() => stats(server, channel));
  return got;
}

async function wsSlice(server, seconds) {
  const socket = await connect(server.url, SELF_ID);
  const base = await stats(server, 'qq');
  const time = Math.floor(Date.now() / 1000);
  let sent = 0;
  let stop = false;
  const pump = () => {
    if (stop) return;
    for (let i = 0; i < 1000 && socket.bufferedAmount < HIGH; i++, sent++) socket.send(frame(next++, time));
    if (socket.bufferedAmount < HIGH) setImmediate(pump);
    else setTimeout(pump, 1);
  };
  pump();
  const run = await counted(server, 'qq', seconds);
  stop = true;
  const got = (await settled(server, 'qq', base + sent)) - base;
  socket.close();
  return { ...run, sent, lost: sent - got, check: got === sent ? 'ok' : `received ${got} of ${sent}` };
}

async function httpSlice(server, seconds) {
  const { default: autocannon } = await import('autocannon');
  const base = await stats(server, 'qqh');
  const time = Math.floor(Date.now() / 1000);
  let built = 0;
  const load = autocannon({
    url: `${server.url}/webhooks/qqh`,
    connections: HTTP_CONNECTIONS,
    duration: WARM + seconds + 0.5,
    method: 'POST',
    requests: [
      {
        setupRequest(request) {
          built++;
          request.body = frame(next++, time);
          request.headers = {
            'content-type': 'application/json',
            'x-self-id': String(SELF_ID),
            'x-signature': `sha1=${createHmac('sha1', SECRET).update(request.body).digest('hex')}`,
          };
          return request;
        },
      },
    ],
  });
  const run = await counted(server, 'qqh', seconds);
  const result = await load;
  const answered = result['2xx'];
  // Requests in flight when autocannon stopped may or may not have been read: between the 2xx answers and those written.
  const got = (await settled(server, 'qqh', base + answered)) - base;
  const bad = result.errors + result.non2xx;
  return {
    ...run,
    sent: built,
    lost: Math.max(0, answered - got),
    check:
      got >= answered && got <= built && bad === 0
        ? 'ok'
        : `received ${got}, answered ${answered}, built ${built}, ${bad} errors/non-2xx`,
  };
}

/** The child's RSS and heapUsed after gc(), over IPC. */
const ask = (server) =>
  new Promise((resolve) => {
    server.child.once('message', (reply) => resolve(reply.mem));
    server.child.send('mem');
  });

/** Memory per idle connection at CONNS sockets, and the state after closing them all. */
async function memory(name, role) {
  const server = await start([name, 'bench/sockets.mjs', { BENCH_SOCKETS_ROLE: role }], { execArgv: ['--expose-gc'] });
  try {
    const open = async (from, count) => {
      const sockets = [];
      for (let i = 0; i < count; i += 50)
        sockets.push(
          ...(await Promise.all(
            Array.from({ length: Math.min(50, count - i) }, (_, j) => connect(server.url, from + i + j)),
          )),
        );
      return sockets;
    };
    const closeAll = (sockets) =>
      Promise.all(
        sockets.map(
          (s) =>
            new Promise((resolve) => {
              s.once('close', resolve);
              s.close();
            }),
        ),
      );
    await closeAll(await open(30_000_000, 20)); // warm the handshake path before the first reading
    await fetch(`${server.url}/v1/connections`);
    await sleep(500);
    const before = await ask(server);
    const sockets = await open(20_000_000, CONNS);
    await sleep(1000);
    const after = await ask(server);
    const listed = async () =>
      role === 'bare'
        ? []
        : (await (await fetch(`${server.url}/v1/connections`)).json()).connections.filter((c) =>
            c.botId.startsWith('2'),
          );
    const openListed = (await listed()).filter((c) => c.state === 'open').length;
    await closeAll(sockets);
    let closedListed = 0;
    for (let i = 0; i < 50 && role !== 'bare' && closedListed < CONNS; i++)
      closedListed = await sleep(100)
        .then(listed)
        .then((l) => l.filter((c) => c.state === 'closed').length);
    const healthz = (await fetch(`${server.url}/healthz`)).status;
    const closed = await ask(server);
    return {
      rss: (after.rss - before.rss) / CONNS,
      heap: (after.heapUsed - before.heapUsed) / CONNS,
      before,
      after,
      closed,
      openListed,
      closedListed,
      healthz,
    };
  } finally {
    server.stop();
  }
}

async function parent() {
  const seconds = Number(process.argv[2] ?? 5);
  const rounds = Number(process.argv[3] ?? 3);
  const setups = [
    ['agent-intake, one reverse WebSocket', 'intake', wsSlice],
    [`agent-intake, HTTP webhooks (${HTTP_CONNECTIONS} connections)`, 'intake', httpSlice],
    ['bare ws server, JSON.parse only', 'bare', wsSlice],
  ];
  const compare = process.env.BENCH_COMPARE;
  if (compare) {
    const name = existsSync(join(compare, 'COMMIT'))
      ? readFileSync(join(compare, 'COMMIT'), 'utf8').trim()
      : 'compared build';
    setups.push([
      `agent-intake ${name}, one reverse WebSocket`,
      'intake',
      wsSlice,
      { BENCH_SOCKETS_DIST: resolve(compare, 'dist') },
    ]);
  }
  const servers = [];
  for (const [name, role, , env] of setups)
    servers.push(await start([name, 'bench/sockets.mjs', { BENCH_SOCKETS_ROLE: role, ...env }]));
  const runs = setups.map(() => []);
  try {
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < setups.length; k++) {
        const i = (k + round) % setups.length;
        runs[i][round] = await setups[i][2](servers[i], seconds);
        console.error(
          `round ${round + 1}, ${setups[i][0]}: ${Math.round(runs[i][round].rps)} events/s, ${runs[i][round].check}`,
        );
      }
    }
  } finally {
    for (const server of servers) server.stop();
  }
  const memSetups = [
    ['agent-intake', 'intake'],
    ['bare ws server', 'bare'],
  ];
  const mem = memSetups.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < memSetups.length; k++) {
      const i = (k + round) % memSetups.length;
      mem[i].push(await memory(...memSetups[i]));
    }
  }

  const int = (x) => Math.round(x).toLocaleString('en-US');
  const range = (xs, f) => `${f(Math.min(...xs))}–${f(Math.max(...xs))}`;
  const ratio = (a, b) => runs[a].map((x, r) => x.rps / runs[b][r].rps);
  const x = (v) => `${v.toFixed(2)}x`;
  console.log(
    `\nOneBot events, one new session each, ${rounds} rounds of ${WARM}s warm + ${seconds}s counted, setups rotated (node ${process.version})`,
  );
  console.log(
    '| setup | events/s (median, range) | outputs/s | main thread µs/event | all threads µs/event | main thread busy | sender busy | lost |\n|---|---:|---:|---:|---:|---:|---:|---:|',
  );
  setups.forEach(([name], i) => {
    const r = runs[i];
    const m = (f) => median(r.map(f));
    console.log(
      `| ${name} | ${int(m((v) => v.rps))} (${range(
        r.map((v) => v.rps),
        int,
      )}) | ${int(m((v) => v.outputs))} | ${m((v) => v.main).toFixed(1)} | ${m((v) => v.all).toFixed(1)} | ${Math.round(m((v) => v.busy) * 100)}% | ${Math.round(m((v) => v.sender) * 100)}% | ${r.reduce((a, v) => a + v.lost, 0)} |`,
    );
  });
  for (const [label, a, b, goal] of [
    ['WebSocket ÷ HTTP', 0, 1, 2],
    ['WebSocket ÷ bare ws', 0, 2, 0.5],
  ]) {
    const rs = ratio(a, b);
    console.log(
      `| **${label}** (goal >= ${goal}x) | **${x(median(rs))}** (${range(rs, x)}) | | | | | | ${median(rs) >= goal ? 'met' : 'not met'} |`,
    );
  }
  const checks = runs.flat().filter((v) => v.check !== 'ok');
  console.log(
    checks.length === 0
      ? 'every slice settled at received == sent'
      : `NOT SETTLED: ${checks.map((v) => v.check).join('; ')}`,
  );
  console.log(
    `\nmemory per idle connection, ${CONNS} sockets, a fresh child per round, median of ${rounds} (after gc)`,
  );
  console.log(
    `| server | RSS bytes / connection (range) | heapUsed bytes / connection (range) | RSS MB before → with ${CONNS} → closed | heapUsed MB before → with → closed | listed open / closed | /healthz after |\n|---|---:|---:|---:|---:|---:|---:|`,
  );
  const mb = (b) => (b / 1048576).toFixed(1);
  mem.forEach((r, i) => {
    const m = r.find((v) => v.rss === median(r.map((w) => w.rss)));
    const lists = memSetups[i][1] === 'bare' ? 'n/a' : r.map((v) => `${v.openListed} / ${v.closedListed}`).join(', ');
    console.log(
      `| ${memSetups[i][0]} | ${int(m.rss)} (${range(
        r.map((v) => v.rss),
        int,
      )}) | ${int(median(r.map((v) => v.heap)))} (${range(
        r.map((v) => v.heap),
        int,
      )}) | ${mb(m.before.rss)} → ${mb(m.after.rss)} → ${mb(m.closed.rss)} | ${mb(m.before.heapUsed)} → ${mb(m.after.heapUsed)} → ${mb(m.closed.heapUsed)} | ${lists} | ${r.map((v) => v.healthz).join(', ')} |`,
    );
  });
}

if (process.env.BENCH_SOCKETS_ROLE) await child(process.env.BENCH_SOCKETS_ROLE);
else await parent();
