// The servers the ingest benchmarks compare, and how they are started and fed.
import { fork } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

/**
 * Another build to run beside this one (BENCH_COMPARE=<folder holding a dist/ of an earlier
 * commit, inside this checkout so it finds node_modules>): a change is then measured against
 * its previous commit in the same run, not against a number from another minute.
 */
const compare = process.env.BENCH_COMPARE;
if (compare && !existsSync(join(compare, 'dist/main.js'))) throw new Error(`BENCH_COMPARE=${compare}: no dist/main.js there`);
const compareName = compare && existsSync(join(compare, 'COMMIT')) ? readFileSync(join(compare, 'COMMIT'), 'utf8').trim() : 'compared build';

/** [name, script, env]: the two baselines first, then agent-intake on each embedded store. */
export const targets = [
  ['bare Koa + koa-router', 'bench/bare-koa.mjs', {}],
  ['seed sketch (naive algorithm)', 'bench/seed-sketch.mjs', {}],
  ['agent-intake, memory store', 'dist/main.js', { INTAKE_STORE: 'memory' }],
  ['agent-intake, sqlite store', 'dist/main.js', { INTAKE_STORE: 'sqlite:./bench.db' }],
  ...(compare ? [
    [`agent-intake ${compareName}, memory store`, join(compare, 'dist/main.js'), { INTAKE_STORE: 'memory' }],
    [`agent-intake ${compareName}, sqlite store`, join(compare, 'dist/main.js'), { INTAKE_STORE: 'sqlite:./bench.db' }],
  ] : []),
];

/**
 * Start one server in a child process with a working directory of its own. `options.execArgv`
 * adds Node flags; `options.onStdout` receives its standard output (ignored otherwise).
 */
export async function start([name, script, env], options = {}) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'intake-bench-'));
  const child = fork(script.startsWith('/') ? script : join(root, script), [], {
    cwd: dir, env: { PATH: process.env.PATH, PORT: String(port), LOG_LEVEL: 'warn', ...env },
    execArgv: options.execArgv ?? [], stdio: ['ignore', options.onStdout ? 'pipe' : 'ignore', 'inherit', 'ipc'],
  });
  if (options.onStdout) child.stdout.setEncoding('utf8').on('data', options.onStdout);
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status < 500, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    name, pid: child.pid, url: `http://127.0.0.1:${port}`,
    stop: () => { child.kill('SIGKILL'); rmSync(dir, { recursive: true, force: true }); },
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

/** An autocannon request whose body is a new message of a new session every time. */
export function newSessionRequests(tag) {
  let n = 0;
  return [{
    setupRequest(request) {
      n++;
      request.body = JSON.stringify({ id: `bench-${tag}-${n}`, sessionKey: `bench:user-${n}`, sender: { id: `u${n}`, name: 'Bench' }, content: `帮我查一下订单 ORD-${n} 的状态`, timestamp: 1710234567 });
      return request;
    },
  }];
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
      return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      return 0; // a thread that ended between the listing and the read
    }
  };
  let all = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) all += of(tid);
  return { main: of(pid), all };
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
    const server = createServer().listen(0, '127.0.0.1', () => { const { port: p } = server.address(); server.close(() => resolve(p)); });
  });
  const dir = mkdtempSync(join(tmpdir(), 'intake-bench-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning', ...args], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try { if (execFileSync('redis-cli', ['-p', String(port), 'PING'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().startsWith('PONG')) break; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  const version = /v=(\S+)/.exec(execFileSync('redis-server', ['--version']).toString())?.[1] ?? '?';
  return { url, port, pid: child.pid, version, stop: () => { child.kill('SIGKILL'); rmSync(dir, { recursive: true, force: true }); } };
}
