// What a OneBot reverse WebSocket loses when the service process ends under a flood: one bot
// sends N frames (about 550 bytes each, 20 users) as fast as its socket takes them into
// `node dist/main.js` on a SQLite store; `ms` after the first frame the process is ended
// (`kill`: SIGKILL; `term`: SIGTERM), started again on the same store, and the frames recorded
// are counted from its event stream (?after=0, once the open buffers are flushed).
// The bot keeps at most HIGH bytes unsent in its own process (it sends while `bufferedAmount`
// is under it, else waits a turn), as a bot minding backpressure does: what it sent is then
// what went into the TCP connection, give or take HIGH. Per run: the frames it sent, those
// recorded, and the difference, lost in flight (in the TCP buffers between the two, or read and
// not yet recorded). Recorded frames must be 1..k, none missing before the last. The kernel's
// TCP buffer maxima are printed beside (net.ipv4.tcp_rmem / tcp_wmem): the receive buffer of
// our socket and the send buffer of the bot's bound what can sit between them.
// BENCH_COMPARE=<folder holding a dist/ of another build> runs that build's rows in the same runs.
// Usage: node bench/socket-loss.mjs [kill|term] [frames=20000] [ms=1500] [runs=3]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import WebSocket from 'ws';
import { freePort } from './servers.mjs';

const root = new URL('..', import.meta.url).pathname;
const [how = 'kill', framesArg = '20000', msArg = '1500', runsArg = '3'] = process.argv.slice(2);
const FRAMES = Number(framesArg);
const builds = [
  ['this build', join(root, 'dist/main.js')],
  ...(process.env.BENCH_COMPARE ? [['compared build', join(resolve(process.env.BENCH_COMPARE), 'dist/main.js')]] : []),
];
const HIGH = 64 * 1024;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const frame = (id) =>
  JSON.stringify({
    time: 1718000001,
    self_id: 10001000,
    post_type: 'message',
    message_type: 'private',
    sub_type: 'friend',
    message_id: id,
    user_id: 1000 + (id % 20),
    sender: { user_id: 1000 + (id % 20), nickname: 'u' },
    message: [{ type: 'text', data: { text: `m${id} ${'x'.repeat(300)}` } }],
    raw_message: `m${id}`,
  });
const FRAME_BYTES = Buffer.byteLength(frame(10_000));
const tcpMax = (name) => Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]);

function serve(main, dir, port) {
  const child = spawn(process.execPath, [main], {
    cwd: dir,
    env: { PATH: process.env.PATH, PORT: String(port), LOG_LEVEL: 'warn', INTAKE_DRAIN_MS: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let log = '';
  child.stdout.on('data', (chunk) => {
    log += chunk;
  });
  child.log = () => log;
  return child;
}
async function ready(port) {
  for (;;) {
    if (
      await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await sleep(20);
  }
}

/** The message ids the store holds, read from the event stream once nothing is left to flush. */
async function recorded(port) {
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    const { debounce } = await (await fetch(`${url}/v1/stats`)).json();
    if (debounce.open === 0 && debounce.flushing === 0) break;
    await sleep(100);
  }
  const ids = [];
  const controller = new AbortController();
  let quiet = setTimeout(() => controller.abort(), 3000);
  try {
    const response = await fetch(`${url}/v1/events?after=0`, { signal: controller.signal });
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of response.body) {
      clearTimeout(quiet);
      quiet = setTimeout(() => controller.abort(), 1000);
      text += decoder.decode(chunk, { stream: true });
      const end = text.lastIndexOf('\n\n');
      for (const match of text.slice(0, end).matchAll(/"messageIds":\[([^\]]*)\]/g))
        for (const id of match[1].split(',')) ids.push(Number(/:(\d+)"$/.exec(id)[1]));
      text = text.slice(end + 2);
    }
  } catch (error) {
    if (error.name !== 'AbortError') throw error;
  }
  clearTimeout(quiet);
  return ids.sort((a, b) => a - b);
}

async function run(main) {
  const dir = mkdtempSync(join(tmpdir(), 'socket-loss-'));
  writeFileSync(
    join(dir, 'intake.config.json'),
    JSON.stringify({ channels: [{ id: 'qq', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok' }] }),
  );
  const port = await freePort();
  let child = serve(main, dir, port);
  await ready(port);
  const socket = new WebSocket(`ws://127.0.0.1:${port}/webhooks/qq`, {
    headers: { authorization: 'Bearer tok', 'x-self-id': '10001000' },
  });
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('open', resolve));
  const started = Date.now();
  let sent = 0;
  let stop = false;
  const sending = new Promise((resolve) => {
    const burst = () => {
      while (!stop && sent < FRAMES && socket.readyState === WebSocket.OPEN && socket.bufferedAmount < HIGH)
        socket.send(frame(++sent));
      if (!stop && sent < FRAMES && socket.readyState === WebSocket.OPEN) setImmediate(burst);
      else resolve();
    };
    burst();
  });
  await sleep(Math.max(0, Number(msArg) - (Date.now() - started)));
  // A crash: the bot stops with the process (what it sends after cannot reach it anyway). A stop:
  // the bot goes on sending until it reads the close.
  if (how !== 'term') stop = true;
  child.kill(how === 'term' ? 'SIGTERM' : 'SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  await sending;
  const refused = (child.log().match(/shutting_down/g) ?? []).length;
  child = serve(main, dir, port);
  await ready(port);
  const ids = await recorded(port);
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
  const prefix = ids.every((id, i) => id === i + 1);
  return { sent, recorded: ids.length, lost: sent - ids.length, prefix, refused };
}

console.log(
  `${how} ${msArg} ms into a flood of ${FRAMES} frames of ${FRAME_BYTES} B (at most ${HIGH / 1024} KiB unsent in the bot); TCP buffer maxima: receive ${(tcpMax('tcp_rmem') / 2 ** 20).toFixed(1)} MiB, send ${(tcpMax('tcp_wmem') / 2 ** 20).toFixed(1)} MiB`,
);
for (let i = 0; i < Number(runsArg); i++) {
  for (const [name, main] of builds) {
    const r = await run(main);
    console.log(
      `${name}: sent ${r.sent}, recorded ${r.recorded} (${r.prefix ? '1..k' : 'NOT 1..k'}), lost in flight ${r.lost} (${Math.round((r.lost * FRAME_BYTES) / 1024)} KiB)${r.refused ? `, ${r.refused} refused shutting_down` : ''}`,
    );
  }
}
