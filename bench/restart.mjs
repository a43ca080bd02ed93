// Restart with a backlog: a SQLite store holding N open buffers, all overdue, is killed with
// SIGKILL and the service (`node dist/main.js`) started on it again. Measures how soon it
// listens (/healthz) and is ready (/readyz), /healthz latency while the backlog drains (polled
// from a separate process, every 10 ms), peak RSS against the RSS once drained, idle CPU after,
// and that every buffered message comes out exactly once (read from the event stream, ?after=0).
//
// The store is filled through the library (intake.ingest, 100 messages of 100 sessions per
// delivery) on a clock an hour behind, with a 10-minute debounce window: nothing flushes while
// filling, and every buffer is 50 minutes overdue when the service starts again.
// Usage: node bench/restart.mjs [buffers=100000]
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuNs, freePort, rssMb } from './servers.mjs';

const root = new URL('..', import.meta.url).pathname;
const self = new URL(import.meta.url).pathname;

if (process.argv[2] === '--fill') await fill(process.argv[3], Number(process.argv[4]));
else if (process.argv[2] === '--poll') await poll(process.argv[3]);
else await parent(Number(process.argv[2] ?? 100_000));

/** Child: fill the store, report, and wait to be killed. */
async function fill(path, count) {
  const { default: pino } = await import('pino');
  const { createIntake } = await import('../dist/service/intake.js');
  const shift = 3_600_000;
  const clock = {
    now: () => Date.now() - shift,
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (t) => clearTimeout(t),
  };
  const intake = await createIntake({
    configFile: { store: `sqlite:${path}`, debounce: { windowMs: 600_000, maxWaitMs: 600_000 } },
    env: {},
    logger: pino({ level: 'silent' }),
    clock,
  });
  const query = new URLSearchParams();
  const PER = 100;
  for (let sent = 0; sent < count;) {
    const deliveries = [];
    for (let d = 0; d < 8 && sent < count; d++) {
      const messages = [];
      for (let i = 0; i < PER && sent < count; i++, sent++) {
        messages.push({
          id: `r-${sent}`,
          sessionKey: `restart:user-${sent}`,
          sender: { id: `u${sent}`, name: 'Bench' },
          content: `帮我查一下订单 ORD-${sent} 的状态`,
          timestamp: 1710234567,
        });
      }
      deliveries.push(
        intake.ingest('generic', { headers: {}, body: Buffer.from(JSON.stringify(messages)), query, now: clock.now() }),
      );
    }
    await Promise.all(deliveries);
  }
  process.send({ open: await intake.store.openBuffers() });
  await new Promise(() => {}); // killed by the parent
}

/** Child: poll /healthz every 10 ms and /readyz until ready; report timings. */
async function poll(url) {
  // Timed from the server's spawn, on the clock both processes share (time origin + now).
  const started = await new Promise((resolve) =>
    process.once('message', (m) => resolve(m.spawnedAt - performance.timeOrigin)),
  );
  let listening;
  let ready;
  const healthz = [];
  let stop = false;
  process.on('message', (m) => {
    if (m === 'stop') stop = true;
  });
  while (!stop) {
    const t = performance.now();
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    const ms = performance.now() - t;
    if (ok) {
      listening ??= t - started;
      healthz.push(ms);
      if (ready === undefined) {
        const r = await fetch(`${url}/readyz`).then(
          (res) => res.ok,
          () => false,
        );
        if (r) ready = performance.now() - started;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  process.send({ listening, ready, healthz });
}

async function parent(count) {
  const dir = mkdtempSync(join(tmpdir(), 'intake-restart-'));
  const path = join(dir, 'b.db');
  const filling = performance.now();
  const filler = fork(self, ['--fill', path, String(count)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const filled = await new Promise((resolve) => filler.once('message', resolve));
  filler.kill('SIGKILL');
  await new Promise((resolve) => filler.once('exit', resolve));
  const fillSeconds = (performance.now() - filling) / 1000;

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const poller = fork(self, ['--poll', url], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise((resolve) => setTimeout(resolve, 300)); // the poller is up before the server starts
  const started = performance.now();
  poller.send({ spawnedAt: performance.timeOrigin + started });
  const server = spawn(process.execPath, [join(root, 'dist/main.js')], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      LOG_LEVEL: 'info',
      INTAKE_STORE: `sqlite:${path}`,
      INTAKE_EVENTS_RETENTION_COUNT: String(count * 2),
    },
  });
  let rssPeakSampled = 0;
  const sampler = setInterval(() => {
    rssPeakSampled = Math.max(rssPeakSampled, rssMb(server.pid).rss);
  }, 20);

  // Read every output from the start of the outbox, as an agent that was away would.
  while (
    !(await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    ))
  )
    await new Promise((resolve) => setTimeout(resolve, 10));
  const outputs = new Set();
  const messages = new Map();
  const response = await fetch(`${url}/v1/events?after=0`);
  const decoder = new TextDecoder();
  let text = '';
  let drainedAt;
  for await (const chunk of response.body) {
    text += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = text.indexOf('\n\n')) !== -1) {
      const frame = text.slice(0, end);
      text = text.slice(end + 2);
      const data = frame.split('\n').find((line) => line.startsWith('data: '));
      if (!data || !frame.includes('event: chat.processedMessage')) continue;
      const output = JSON.parse(data.slice(6));
      outputs.add(output.id);
      for (const id of output.messageIds) messages.set(id, (messages.get(id) ?? 0) + 1);
    }
    if (messages.size >= count) {
      drainedAt = performance.now();
      break;
    }
  }
  const drainSeconds = (drainedAt - started) / 1000;
  // A little more, to see anything emitted twice; then settle and read the steady RSS.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  poller.send('stop');
  const polled = await new Promise((resolve) => poller.once('message', resolve));
  clearInterval(sampler);
  const steady = rssMb(server.pid);
  const before = cpuNs(server.pid);
  await new Promise((resolve) => setTimeout(resolve, 5000));
  const after = cpuNs(server.pid);
  const openAfter = await fetch(`${url}/v1/stats`)
    .then((r) => r.json())
    .then((s) => s.debounce.open);
  server.kill('SIGKILL');
  poller.kill();
  rmSync(dir, { recursive: true, force: true });

  const sorted = polled.healthz.sort((a, b) => a - b);
  const pct = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  const twice = [...messages.values()].filter((n) => n > 1).length;
  const peak = Math.max(steady.peak, rssPeakSampled);
  console.log(
    `\nrestart with ${filled.open.toLocaleString('en')} overdue buffers (SQLite, filled in ${fillSeconds.toFixed(1)} s, then SIGKILL), node ${process.version}`,
  );
  console.log('| measure | value |\n|---|---:|');
  console.log(`| listening (/healthz 200) after start | ${Math.round(polled.listening)} ms |`);
  console.log(`| ready (/readyz 200) after start | ${Math.round(polled.ready)} ms |`);
  console.log(`| backlog drained (last output read) after start | ${drainSeconds.toFixed(1)} s |`);
  console.log(
    `| /healthz while draining: p50 / p99 / max (${sorted.length} polls) | ${pct(0.5).toFixed(1)} / ${pct(0.99).toFixed(1)} / ${sorted.at(-1).toFixed(1)} ms |`,
  );
  console.log(
    `| peak RSS / RSS once drained | ${peak.toFixed(0)} / ${steady.rss.toFixed(0)} MB (${(peak / steady.rss).toFixed(2)}x) |`,
  );
  console.log(
    `| outputs / messages out / messages emitted twice / missing | ${outputs.size} / ${messages.size} / ${twice} / ${count - messages.size} |`,
  );
  console.log(`| buffers still open after | ${openAfter} |`);
  console.log(`| idle CPU after the drain (all threads) | ${((after.all - before.all) / 1000 / 5).toFixed(0)} µs/s |`);
  process.exit(0);
}
