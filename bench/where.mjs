// Where a saturated server's main thread spends its time, per request, by kind of code, for
// every server of bench/servers.mjs: Linux `perf` samples the main thread (kernel included)
// while autocannon saturates it, and each sample is put in a category by the function it was in.
// The kernel's share is split out where its stack shows a response waking the load generator
// (`sock_def_readable`): on a small machine the load generator shares the cores, and a slower
// server leaves it idle more often, so each answer more often wakes it from sleep (on a VM, an
// interrupt to another virtual CPU). That cost grows with the server's slowness, not its work.
//
// A sample counts where its leaf frame is: time in a builtin called from our code (a Map lookup,
// JSON.stringify) is V8's, and code still running in V8's interpreter shows as V8's too, so "our
// JS" is only what runs compiled in our own functions.
//
// V8's own profiler cannot make this split: it sees no kernel time, and its samples taken while
// the thread waited for a core land on whatever JS function was running.
//
// Needs `perf` (Debian: linux-perf) and permission to trace a child process (root, or
// kernel.perf_event_paranoid <= 1); without perf it prints that it skipped. Node writes /tmp/perf-<pid>.map (--perf-basic-prof-only-functions)
// so JS functions have names; the file is removed afterwards.
// BENCH_TRAFFIC=telegram sends Telegram updates instead of generic webhooks (bench/traffic.mjs).
// Usage: node bench/where.mjs [seconds=5] [connections=50]
import autocannon from 'autocannon';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { start, targets, traffic, trafficLoad } from './servers.mjs';

const seconds = Number(process.argv[2] ?? 5);
const connections = Number(process.argv[3] ?? 50);
const HZ = 4999;

/** Print why the bench did not run and end without failing: `npm run bench` goes on without it. */
function skip(reason) {
  console.log(`\nbench/where.mjs: skipped, ${reason}`);
  process.exit(0);
}

if (spawnSync('perf', ['--version']).status !== 0) skip('it needs Linux perf (Debian: apt-get install linux-perf)');
const paranoid = Number(readFileSync('/proc/sys/kernel/perf_event_paranoid', 'utf8'));
// Above 1, perf samples user space only for a non-root user: the kernel rows would read 0.
if (process.getuid?.() !== 0 && paranoid > 1)
  skip(
    `perf may not sample the kernel here (kernel.perf_event_paranoid is ${paranoid}): run as root, or sysctl kernel.perf_event_paranoid=1`,
  );

const ourCode = new URL('../dist/', import.meta.url).pathname;

/** The category of a sample, from its leaf frame and whether its stack wakes a reader. */
function categoryOf(frames) {
  const { sym, dso } = frames[0] ?? { sym: '[unknown]', dso: '' };
  // The kernel and its modules ([virtio_net], ...); the vDSO is the C library's.
  if (dso.includes('kernel') || (/^\[.*\]$/.test(dso) && dso !== '[vdso]')) {
    return frames.some((f) => f.sym === 'sock_def_readable') ? 'kernel: waking the load generator' : 'kernel: the rest';
  }
  if (sym.startsWith('JS:')) {
    if (sym.includes('/node_modules/')) return 'JS: packages (koa, router, ...)';
    if (sym.includes(ourCode)) return 'JS: agent-intake';
    if (sym.includes('/bench/')) return 'JS: the bench server itself';
    return 'JS: Node internals';
  }
  if (sym === '[unknown]' || dso.startsWith('/tmp/perf-'))
    return 'V8: builtins and runtime (ICs, calls, JSON, strings, compiler)';
  if (dso.includes('better_sqlite3')) return 'SQLite (better-sqlite3)';
  if (/libc\.so|libstdc\+\+|libm\.so|ld-linux|\[vdso\]/.test(dso)) return 'libc (malloc, memcpy, ...)';
  if (
    /Scaveng|MarkCompact|Marking|Sweep|Evacuat|RecordWrite|Remembered|ConcurrentMark|Heap::|GCTracer|MemoryAllocator|BasicMemoryChunk/.test(
      sym,
    )
  )
    return 'V8: garbage collector';
  if (/Builtins_|v8::|V8|Runtime_|Stub/.test(sym))
    return 'V8: builtins and runtime (ICs, calls, JSON, strings, compiler)';
  if (/node::|uv_|uv__|llhttp|OPENSSL|ossl_|EVP_|sha256|simdutf|nghttp|cares|ares_/.test(sym))
    return 'Node native (streams, HTTP parser, libuv, OpenSSL)';
  return 'other native code';
}

/**
 * Samples of `perf script -F period,ip,sym,dso` output: each sample's period (ns of the
 * cpu-clock event) and its frames, leaf first.
 */
function* samplesOf(text) {
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n');
    const head = lines.findIndex((line) => /^\s*\d+\s*$/.test(line));
    if (head === -1) continue;
    const frames = lines
      .slice(head + 1)
      .filter((line) => line.trim() !== '')
      .map((line) => {
        const m = /^\s*[0-9a-f]+ (.*) \(([^)]*)\)\s*$/.exec(line);
        return m ? { sym: m[1].replace(/\+0x[0-9a-f]+$/, ''), dso: m[2] } : { sym: line.trim(), dso: '' };
      });
    yield { period: Number(lines[head]), frames };
  }
}

const dir = mkdtempSync(join(tmpdir(), 'intake-where-'));
const rows = [];
for (const target of targets) {
  const server = await start(target, { execArgv: ['--perf-basic-prof-only-functions'] });
  const load = (duration) =>
    autocannon({ ...trafficLoad(server.url, `${server.pid}-${Date.now()}`), connections, duration });
  await load(3); // warm-up: compiled code, and the young generation grown to its working size
  const data = join(dir, `${server.pid}.data`);
  // cpu-clock: a timer, on every machine (a VM often has no hardware counters).
  const perf = spawn(
    'perf',
    ['record', '-q', '-e', 'cpu-clock', '-F', String(HZ), '-g', '-t', String(server.pid), '-o', data],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let perfErrors = '';
  perf.stderr.setEncoding('utf8').on('data', (chunk) => {
    perfErrors += chunk;
  });
  const perfExited = new Promise((resolve) => perf.once('exit', resolve));
  const early = await Promise.race([perfExited.then(() => true), sleep(500).then(() => false)]);
  if (early) {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(`/tmp/perf-${server.pid}.map`, { force: true });
    skip(`perf record stopped before the load: ${perfErrors.trim().split('\n')[0] || 'no message'}`);
  }
  const result = await load(seconds);
  perf.kill('SIGINT');
  await perfExited;
  const script = spawnSync('perf', ['script', '-i', data, '-F', 'period,ip,sym,dso'], {
    maxBuffer: 1 << 30,
    encoding: 'utf8',
  }).stdout;
  server.stop();
  rmSync(`/tmp/perf-${server.pid}.map`, { force: true });
  const byCategory = new Map();
  let totalNs = 0;
  let kernelSeen = false;
  for (const { period, frames } of samplesOf(script)) {
    const category = categoryOf(frames);
    if (category.startsWith('kernel')) kernelSeen = true;
    byCategory.set(category, (byCategory.get(category) ?? 0) + period);
    totalNs += period;
  }
  if (totalNs === 0 || !kernelSeen) {
    rmSync(dir, { recursive: true, force: true });
    skip(
      `perf recorded ${totalNs === 0 ? 'nothing' : 'no kernel time'} for ${target[0]} (${perfErrors.trim().split('\n')[0] || 'no message'})`,
    );
  }
  const requests = result.requests.total;
  const perRequest = (ns) => ns / 1000 / requests;
  rows.push({
    name: target[0],
    rps: result.requests.average,
    total: perRequest(totalNs),
    byCategory: new Map([...byCategory].map(([k, ns]) => [k, perRequest(ns)])),
  });
}
rmSync(dir, { recursive: true, force: true });

const categories = [...new Set(rows.flatMap((row) => [...row.byCategory.keys()]))].sort(
  (a, b) => (rows[2]?.byCategory.get(b) ?? 0) - (rows[2]?.byCategory.get(a) ?? 0),
);
console.log(
  `\nwhere the main thread's time goes under saturation: µs per request, ${seconds}s of autocannon at ${connections} connections, ${traffic} webhooks, every request a new session (node ${process.version}, perf cpu-clock at ${HZ} Hz)`,
);
console.log(`| category | ${rows.map((row) => row.name).join(' | ')} |\n|---|${rows.map(() => '---:').join('|')}|`);
for (const category of categories)
  console.log(`| ${category} | ${rows.map((row) => (row.byCategory.get(category) ?? 0).toFixed(1)).join(' | ')} |`);
console.log(`| **main thread, all** | ${rows.map((row) => `**${row.total.toFixed(1)}**`).join(' | ')} |`);
console.log(`| req/s in that run | ${rows.map((row) => row.rps.toFixed(0)).join(' | ')} |`);
