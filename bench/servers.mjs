// The servers the ingest benchmarks compare, and how they are started and fed.
import { fork } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { intakeEnv, newSessionBody, TELEGRAM, telegramUpdateBody, traffic } from './traffic.mjs';

export { newSessionBody, newSessionRequests, telegramUpdateBody, traffic, trafficLoad } from './traffic.mjs';

const root = new URL('..', import.meta.url).pathname;

/**
 * Another build to run beside this one (BENCH_COMPARE=<folder holding a dist/ of an earlier
 * commit, inside this checkout so it finds node_modules>): a change is then measured against
 * its previous commit in the same run, not against a number from another minute.
 */
const compare = process.env.BENCH_COMPARE;
if (compare && !existsSync(join(compare, 'dist/main.js')))
  throw new Error(`BENCH_COMPARE=${compare}: no dist/main.js there`);
const compareName =
  compare && existsSync(join(compare, 'COMMIT'))
    ? readFileSync(join(compare, 'COMMIT'), 'utf8').trim()
    : 'compared build';

/** [name, script, env]: the two baselines first, then agent-intake on each embedded store. */
export const targets = [
  ['bare Koa + @koa/router', 'bench/bare-koa.mjs', {}],
  ['naive baseline', 'bench/naive-baseline.mjs', {}],
  ['agent-intake, memory store', 'dist/main.js', { INTAKE_STORE: 'memory', ...intakeEnv }],
  ['agent-intake, sqlite store', 'dist/main.js', { INTAKE_STORE: 'sqlite:./bench.db', ...intakeEnv }],
  ...(compare
    ? [
        [
          `agent-intake ${compareName}, memory store`,
          join(compare, 'dist/main.js'),
          { INTAKE_STORE: 'memory', ...intakeEnv },
        ],
        [
          `agent-intake ${compareName}, sqlite store`,
          join(compare, 'dist/main.js'),
          { INTAKE_STORE: 'sqlite:./bench.db', ...intakeEnv },
        ],
      ]
    : []),
];

/**
 * Start one server in a child process with a working directory of its own. `options.execArgv`
 * adds Node flags; `options.onStdout` receives its standard output (ignored otherwise).
 */
export async function start([name, script, env], options = {}) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'intake-bench-'));
  const child = fork(script.startsWith('/') ? script : join(root, script), [], {
    cwd: dir,
    env: { PATH: process.env.PATH, PORT: String(port), LOG_LEVEL: 'warn', INTAKE_DRAIN_MS: '0', ...env },
    execArgv: options.execArgv ?? [],
    stdio: ['ignore', options.onStdout ? 'pipe' : 'ignore', 'inherit', 'ipc'],
  });
  if (options.onStdout) child.stdout.setEncoding('utf8').on('data', options.onStdout);
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status < 500,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    name,
    pid: child.pid,
    url: `http://127.0.0.1:${port}`,
    child,
    stop: () => {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A loopback port free now (a random one could be a client socket's: autocannon opens hundreds). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * A steady load: `rate` new-session webhooks a second for `seconds`, request i due at
 * start + i/rate (checked on a 1 ms timer, so a few at a time at high rates), sent over
 * `connections` keep-alive connections whether or not earlier answers came back (an open
 * loop): a request due while every connection waits for an answer queues here, and that wait
 * counts in its latency. autocannon's `overallRate` is no steady load: each connection sends its
 * share of the second as fast as it can, then waits for the next second, so "half the max rate"
 * is the max rate for half of each second.
 *
 * Raw sockets and a minimal response reader (status line, Content-Length), like autocannon's,
 * so the load generator costs little of the CPU it shares with the server.
 * The requests follow `traffic` (generic webhooks, or Telegram updates).
 * Resolves with each 2xx answer's latency percentiles (ms, from when it was due), the counts,
 * and the seconds the run took (past `seconds` when the server fell behind).
 */
export async function paced(server, { rate, seconds, connections = 20, tag = `${server.pid}-${Date.now()}` }) {
  const { connect } = await import('node:net');
  const { hostname, port } = new URL(server.url);
  const total = Math.max(1, Math.round(rate * seconds));
  const latencies = [];
  let errors = 0;
  let non2xx = 0;
  let done = 0;
  /** Requests due so far (queued or sent). */
  let queued = 0;
  const queue = [];
  const idle = [];
  let finish;
  let fail;
  const finished = new Promise((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const answered = () => {
    if (++done === total) finish();
  };

  const webhook =
    traffic === 'telegram'
      ? `POST /webhooks/${TELEGRAM.id} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nX-Telegram-Bot-Api-Secret-Token: ${TELEGRAM.secretToken}\r\n`
      : `POST /webhooks/generic HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n`;
  const request = (n) => {
    const body = traffic === 'telegram' ? telegramUpdateBody() : newSessionBody(tag, n);
    return `${webhook}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  };
  const open = () => {
    const socket = connect(Number(port), hostname);
    socket.setNoDelay(true);
    const conn = { socket, dueAt: 0, buffer: '', connected: false };
    socket.once('connect', () => {
      conn.connected = true;
    });
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => {
      conn.buffer += chunk;
      const head = conn.buffer.indexOf('\r\n\r\n');
      if (head === -1) return;
      const length = Number(/content-length: *(\d+)/i.exec(conn.buffer.slice(0, head))?.[1] ?? 0);
      if (conn.buffer.length < head + 4 + length) return;
      const status = Number(conn.buffer.slice(9, 12));
      conn.buffer = conn.buffer.slice(head + 4 + length);
      if (status < 300) latencies.push(performance.now() - conn.dueAt);
      else non2xx++;
      answered();
      next(conn);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      // A connection that never opened: the server is not there.
      if (!conn.connected) return fail(new Error(`cannot connect to ${server.url}`));
      // A connection the server closed: what it had in flight is an error; open another.
      if (conn.dueAt !== 0) {
        errors++;
        answered();
      }
      if (done < total) next(open());
    });
    return conn;
  };
  const next = (conn) => {
    const dueAt = queue.shift();
    if (dueAt === undefined) {
      conn.dueAt = 0;
      idle.push(conn);
      return;
    }
    conn.dueAt = dueAt;
    // The requests taken off the queue so far, this one included, number it.
    conn.socket.write(request(queued - queue.length));
  };
  for (let i = 0; i < connections; i++) idle.push(open());
  await Promise.race([
    finished,
    Promise.all(idle.map((conn) => new Promise((resolve) => conn.socket.once('connect', resolve)))),
  ]);

  const started = performance.now();
  const tick = () => {
    const now = performance.now();
    const due = Math.min(total, Math.floor(((now - started) * rate) / 1000) + 1);
    while (queued < due) {
      queued++;
      queue.push(now);
      const conn = idle.pop();
      if (conn) next(conn);
    }
    if (queued < total) setTimeout(tick, 1);
  };
  tick();
  await finished;
  const took = (performance.now() - started) / 1000;
  for (const conn of idle) conn.socket.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { total, ok: latencies.length, errors, non2xx, took, p50: at(0.5), p99: at(0.99), p999: at(0.999) };
}

/** CPU ticks (1/100 s) a process has used: its main thread alone, and all its threads. */
export function cpuTicks(pid) {
  const ticks = (path) => {
    const fields = readFileSync(path, 'utf8').split(') ')[1].split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  return { main: ticks(`/proc/${pid}/task/${pid}/stat`), all: ticks(`/proc/${pid}/stat`) };
}

/**
 * CPU time in ns (from /proc/<pid>/task/<tid>/schedstat, nanosecond resolution where `stat`
 * counts 10 ms ticks): the main thread alone, and all threads.
 */
export function cpuNs(pid) {
  const of = (tid) => {
    try {
      return schedstat(pid, tid).run;
    } catch {
      return 0; // a thread that ended between the listing and the read
    }
  };
  let all = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) all += of(tid);
  return { main: of(pid), all };
}

/**
 * How long a thread has waited on a run queue, in ns (/proc/<pid>/task/<tid>/schedstat, second
 * field): runnable, and no core free for it. The main thread by default.
 */
export function runQueueNs(pid, tid = pid) {
  return schedstat(pid, tid).waited;
}

/** A thread's /proc schedstat: ns on a core, ns runnable waiting for one. */
function schedstat(pid, tid) {
  const [run, waited] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
  return { run: Number(run), waited: Number(waited) };
}

/**
 * The bracketed layout of bench/ingest.mjs and bench/latency.mjs: this VM's speed moves in
 * steps of ~10 s, so each server's run sits between two runs of the baseline ("bare, A, bare,
 * B, ...", the order of the others rotated per round). `measure(server)` runs one server;
 * `onBare(run)` gets every baseline run, `onServer(server, run, before, after)` every other
 * server's run with the baseline runs on either side of it.
 */
export async function bracketed(bare, others, rounds, measure, { onBare, onServer }) {
  for (let round = 0; round < rounds; round++) {
    const order = others.map((_, i) => others[(i + round) % others.length]);
    let before = await measure(bare);
    onBare(before);
    for (const server of order) {
      const run = await measure(server);
      const after = await measure(bare);
      onBare(after);
      onServer(server, run, before, after);
      before = after;
    }
  }
}

/** Resident set size and its peak so far, in MB (/proc/<pid>/status VmRSS and VmHWM). */
export function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** The fields of one `node --trace-gc-nvp` line (name=value pairs), or undefined for other lines. */
export function gcLine(line) {
  if (!line.includes(' gc=')) return undefined;
  const fields = {};
  for (const pair of line.split(' ')) {
    const at = pair.indexOf('=');
    if (at > 0) fields[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return fields;
}

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** A throwaway redis-server (no persistence unless `args` ask) on a free loopback port. */
export async function startRedisServer(args = []) {
  const { spawn, execFileSync } = await import('node:child_process');
  const { createServer } = await import('node:net');
  const port = await new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port: p } = server.address();
      server.close(() => resolve(p));
    });
  });
  const dir = mkdtempSync(join(tmpdir(), 'intake-bench-redis-'));
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--loglevel',
      'warning',
      ...args,
    ],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      if (
        execFileSync('redis-cli', ['-p', String(port), 'PING'], { stdio: ['ignore', 'pipe', 'ignore'] })
          .toString()
          .startsWith('PONG')
      )
        break;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const version = /v=(\S+)/.exec(execFileSync('redis-server', ['--version']).toString())?.[1] ?? '?';
  return {
    url,
    port,
    pid: child.pid,
    version,
    stop: () => {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Store-level message `n` (RedisStore.admit's item): a new session with one exact-id claim, due 1 ms after it. */
export function storeItem(n) {
  const event = {
    id: `m${n}`,
    kind: 'message',
    channel: 'g',
    adapter: 'generic',
    namespace: 'g',
    conversation: { type: 'private', id: `u${n}` },
    sessionKey: `g:u${n}`,
    sender: { id: `u${n}`, name: 'Ana' },
    segments: [{ type: 'text', text: 'hello, where is ORD-123?' }],
    text: 'hello, where is ORD-123?',
    media: [],
    mentions: [],
    timestamp: 1710234567,
    botId: 'b',
  };
  return {
    claims: [{ key: `id:g:${n}`, space: 'id:g', ttlMs: 300_000, maxKeys: 1_000_000 }],
    part: { debounceKey: `g:u${n}\u0000u`, receivedAt: 0, event },
    rule: { windowMs: 1, maxWaitMs: 10_000, maxMessages: 20 },
    closeNow: false,
  };
}
