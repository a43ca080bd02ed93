// Agent workers' claims beside the push and the event stream: the same outputs consumed three
// ways, each by a fresh service process (dist/main.js) on the memory store, then on SQLite.
// `outputs` generic messages over `sessions` sessions are posted as fast as the service takes
// them (arrays of 100, four requests at a time), debounced one message to one output
// (maxMessages 1), and consumed by
// - push: `agent.url` to a local agent (a child process answering 204 at once),
// - claims: `agent.claims`, four worker processes on dist/client.js, up to 10 claims a poll,
//   each acked at once,
// - SSE: one `/v1/events` reader, neither push nor claims: the floor.
// Per mode: outputs/s from the first post to the last output consumed (acked, answered, read),
// the service process's CPU µs per output (all its threads, /proc schedstat, over that span),
// and for push and claims the latency from an output's commit to the push reaching the agent /
// the claim reaching a worker's loop, p50 / p99. The commit's time is the trail's `batch` entry
// (`at`, recorded by the service's clock right after the commit), read back from
// `/v1/activity?after=0` once the run is over, outside the span measured. Modes rotate over
// rounds; figures are medians of rounds. The goal: claims within 1.5x of the push's CPU per output.
// Also per mode: the consumers' CPU per output (the agent, or the four workers together), and
// the claims a poll brought back.
// Usage: node bench/claims.mjs [outputs=4000] [sessions=200] [rounds=3]
// BENCH_PROFILE=<folder>: the service and the consumers write `node --cpu-prof` profiles there
// (no latency then: the trail's replay would fill them).
import { fork } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import { cpuNs, median, start } from './servers.mjs';

const TOKEN = 'bench-claims-operator-token';
const SECRET = 'whsec_' + Buffer.from('bench-claims-agent-secret-0123456789').toString('base64');
const WORKERS = 4;
const PER_POLL = 10;
const BATCH = 100;
const POSTERS = 4;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const self = new URL(import.meta.url).pathname;
/** BENCH_PROFILE=<folder>: the service and the consumers write V8 CPU profiles there (`node --cpu-prof`). */
const profile = process.env.BENCH_PROFILE;
const execArgv = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];

/**
 * Sends `[id, at, ...]` pairs to the parent every 20 ms rather than one IPC message per output,
 * so the consumer's bookkeeping costs little of the CPU it shares with the service.
 */
function reporter() {
  let got = [];
  let timer;
  const flush = () => {
    timer = undefined;
    if (got.length === 0) return;
    process.send({ got });
    got = [];
  };
  return (id, at) => {
    got.push(id, at);
    timer ??= setTimeout(flush, 20);
  };
}

/** The push's agent: answers every push 204 at once, noting its output id (webhook-id) and when it came. */
async function agent() {
  const report = reporter();
  const server = http.createServer((req, res) => {
    report(req.headers['webhook-id'], Date.now());
    req.resume();
    req.on('end', () => {
      res.statusCode = 204;
      res.end();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
}

/** A claims worker on the built client: acks each claim at once, noting when its loop got it and when the ack was answered. */
async function worker(url) {
  const { claims } = await import(new URL('../dist/client.js', import.meta.url).href);
  const report = reporter();
  process.send({ ready: true });
  // Each poll counted (the claims a poll brings back: acks ÷ polls).
  const counting = (input, init) => {
    if (String(input).includes('/v1/claims?')) report('poll', 0);
    return fetch(input, init);
  };
  for await (const claim of claims({ url, token: TOKEN, max: PER_POLL, waitMs: 30_000, fetch: counting })) {
    const claimedAt = Date.now();
    await claim.ack();
    report(claim.output.id, claimedAt);
    report('acked', Date.now());
  }
}

/** A child process of this script in `role`, with a promise of its first message. */
function child(role, args = []) {
  const proc = fork(self, [role, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv });
  // A profiled consumer exits on SIGTERM, so that its profile is written.
  proc.stop = () => proc.kill(profile ? 'SIGTERM' : 'SIGKILL');
  const first = new Promise((resolve, reject) => {
    proc.once('message', resolve);
    proc.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
  });
  return { proc, first };
}

/** One `/v1/events` reader counting outputs, and when it read the last. */
function sseReader(url, onOutput) {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${url}/v1/events`,
      { headers: { accept: 'text/event-stream', authorization: `Bearer ${TOKEN}` } },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`/v1/events: ${res.statusCode}`));
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk) => {
          const frames = (buffer + chunk).split('\n\n');
          buffer = frames.pop();
          const outputs = frames.filter((frame) => frame.includes('\nevent: chat.processedMessage\n')).length;
          if (outputs > 0) onOutput(outputs, Date.now());
        });
        resolve(() => req.destroy());
      },
    );
    req.on('error', () => undefined);
  });
}

/** Message `i` of `tag`: session i mod `sessions`, its text unique (no fuzzy duplicate). */
function message(tag, i, sessions) {
  const s = i % sessions;
  return {
    id: `claims-${tag}-${i}`,
    sessionKey: `bench:s-${s}`,
    sender: { id: `u${s}`, name: 'Bench' },
    content: `帮我查一下订单 ORD-${i} 的状态`,
    timestamp: 1710234567,
  };
}

/** Posts every message in arrays of BATCH, POSTERS requests at a time; a 429 or 503 (backpressure) is sent again shortly. */
async function post(url, tag, outputs, sessions) {
  const bodies = [];
  for (let i = 0; i < outputs; i += BATCH) {
    const batch = [];
    for (let j = i; j < Math.min(outputs, i + BATCH); j++) batch.push(message(tag, j, sessions));
    bodies.push(JSON.stringify(batch));
  }
  let next = 0;
  let refused = 0;
  const poster = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      for (;;) {
        const res = await fetch(`${url}/webhooks/generic`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        await res.arrayBuffer();
        if (res.status < 300) break;
        if (res.status !== 429 && res.status !== 503) throw new Error(`POST /webhooks/generic: ${res.status}`);
        refused++;
        await sleep(20);
      }
    }
  };
  await Promise.all(Array.from({ length: POSTERS }, poster));
  return refused;
}

/** Output id -> when it was committed: the trail's batch entries, replayed from its start. */
async function commitTimes(url, count) {
  const times = new Map();
  await new Promise((resolve, reject) => {
    const req = http.get(
      `${url}/v1/activity?after=0`,
      { headers: { accept: 'text/event-stream', authorization: `Bearer ${TOKEN}` } },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`/v1/activity: ${res.statusCode}`));
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk) => {
          buffer += chunk;
          const lines = buffer.split('\n');
          buffer = lines.pop();
          for (const line of lines) {
            if (!line.startsWith('data: ')) continue;
            const entry = JSON.parse(line.slice(6));
            if (entry.kind === 'batch' && entry.verdict === undefined) times.set(entry.id, entry.at);
          }
          if (times.size >= count) {
            req.destroy();
            resolve();
          }
        });
      },
    );
    req.on('error', reject);
    setTimeout(() => reject(new Error(`/v1/activity: ${times.size} of ${count} commits`)), 60_000).unref();
  });
  return times;
}

const percentile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

/** One run of `mode` on `store`: a fresh service and consumers, the outputs posted and consumed. */
async function run(mode, store, { outputs, sessions, tag }) {
  const env = {
    INTAKE_STORE: store === 'memory' ? 'memory' : 'sqlite:./bench.db',
    INTAKE_API_TOKEN: TOKEN,
    INTAKE_DEBOUNCE_WINDOW_MS: '10',
    INTAKE_DEBOUNCE_MAX_MESSAGES: '1',
    INTAKE_TRACE_MAX_ENTRIES: String(outputs * 4 + 1000),
    INTAKE_EVENTS_RETENTION_COUNT: String(Math.max(10_000, outputs * 2)),
  };
  const consumers = [];
  /** Output id -> when its consumer got it (the first time, for one sent twice). */
  const got = new Map();
  let lastAt = 0;
  let seen = 0;
  let polls = 0;
  const note = ({ got: pairs }) => {
    for (let i = 0; i < pairs.length; i += 2) {
      const [id, at] = [pairs[i], pairs[i + 1]];
      if (id === 'poll') {
        polls++;
        continue;
      }
      if (at > lastAt) lastAt = at;
      if (id !== 'acked' && !got.has(id)) got.set(id, at);
    }
  };
  if (mode === 'push') {
    const agentChild = child('--agent');
    consumers.push(agentChild.proc);
    const { port } = await agentChild.first;
    agentChild.proc.on('message', note);
    env.INTAKE_AGENT_URL = `http://127.0.0.1:${port}/`;
    env.INTAKE_AGENT_SECRET = SECRET;
  } else if (mode === 'claims') {
    env.INTAKE_AGENT_CLAIMS_LEASE_MS = '60000';
    env.INTAKE_AGENT_CLAIMS_MAX_ATTEMPTS = '10';
  }
  const server = await start([`${mode}, ${store}`, 'dist/main.js', env], { execArgv });
  let closeSse;
  try {
    if (mode === 'claims') {
      const workers = Array.from({ length: WORKERS }, () => child('--worker', [server.url]));
      for (const w of workers) {
        consumers.push(w.proc);
        w.proc.on('message', (m) => m.got && note(m));
      }
      await Promise.all(workers.map((w) => w.first));
    } else if (mode === 'sse') {
      closeSse = await sseReader(server.url, (n, at) => {
        seen += n;
        lastAt = at;
      });
    }
    // The consumers' first polls and connections settle; the service is idle again.
    await sleep(500);
    const consumersCpu = () => consumers.reduce((sum, proc) => sum + cpuNs(proc.pid).all, 0);
    const before = cpuNs(server.pid).all;
    const consumersBefore = consumersCpu();
    const startedAt = Date.now();
    const refused = await post(server.url, tag, outputs, sessions);
    const consumed = () => (mode === 'sse' ? seen : got.size);
    for (let waited = 0; consumed() < outputs; waited += 5) {
      if (waited > 120_000) throw new Error(`${mode}, ${store}: ${consumed()} of ${outputs} outputs consumed`);
      await sleep(5);
    }
    const cpu = cpuNs(server.pid).all - before;
    const consumersUs = (consumersCpu() - consumersBefore) / 1000 / outputs;
    const seconds = (lastAt - startedAt) / 1000;
    const result = {
      outputsPerS: outputs / seconds,
      cpuUs: cpu / 1000 / outputs,
      consumersUs,
      perPoll: outputs / (polls - WORKERS),
      refused,
    };
    // Not while profiling: the replay of the trail would fill the profile.
    if (mode !== 'sse' && !profile) {
      const commits = await commitTimes(server.url, outputs);
      const latencies = [...got].map(([id, at]) => at - commits.get(id)).sort((a, b) => a - b);
      result.p50 = percentile(latencies, 0.5);
      result.p99 = percentile(latencies, 0.99);
    }
    return result;
  } finally {
    closeSse?.();
    for (const proc of consumers) proc.stop();
    if (profile) {
      // The service drains and exits on SIGTERM, writing its profile.
      server.child.kill('SIGTERM');
      await new Promise((resolve) => server.child.once('exit', resolve));
    }
    server.stop();
  }
}

async function main() {
  const outputs = Number(process.argv[2] ?? 4000);
  const sessions = Number(process.argv[3] ?? 200);
  const rounds = Number(process.argv[4] ?? 3);
  const setups = ['memory', 'sqlite'].flatMap((store) => ['push', 'claims', 'sse'].map((mode) => [mode, store]));
  const results = new Map(setups.map(([mode, store]) => [`${mode}, ${store}`, []]));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < setups.length; i++) {
      const [mode, store] = setups[(i + round) % setups.length];
      results.get(`${mode}, ${store}`).push(await run(mode, store, { outputs, sessions, tag: `${round}-${i}` }));
    }
  }
  const med = (name, field) => median(results.get(name).map((r) => r[field]));
  const fixed = (value, digits = 0) => (Number.isFinite(value) ? value.toFixed(digits) : '–');
  console.log(
    `\n# Claims beside the push and SSE: ${os.availableParallelism()} cores, node ${process.version}, ${outputs} outputs over ${sessions} sessions, ${WORKERS} workers (up to ${PER_POLL} a poll), median of ${rounds} rounds`,
  );
  console.log(
    '| mode | outputs/s | service CPU µs per output | agent / workers CPU µs per output | commit to push / claim p50 ms | p99 ms | outputs/s each round | refused posts |\n|---|---:|---:|---:|---:|---:|---|---:|',
  );
  for (const [mode, store] of setups) {
    const name = `${mode}, ${store}`;
    const r = results.get(name);
    console.log(
      `| ${name} | ${fixed(med(name, 'outputsPerS'))} | ${fixed(med(name, 'cpuUs'), 1)} | ${mode === 'sse' ? '–' : fixed(med(name, 'consumersUs'), 1)} | ${mode === 'sse' ? '–' : fixed(med(name, 'p50'), 1)} | ${mode === 'sse' ? '–' : fixed(med(name, 'p99'), 1)} | ${r.map((x) => fixed(x.outputsPerS)).join(', ')} | ${r.reduce((n, x) => n + x.refused, 0)} |`,
    );
  }
  console.log(
    '\n| store | claims ÷ push, CPU per output (goal <= 1.5x) | claims ÷ push, outputs/s | claims ÷ SSE, CPU per output | claims a poll brought |\n|---|---:|---:|---:|---:|',
  );
  for (const store of ['memory', 'sqlite']) {
    const ratio = (a, b, field) => med(`${a}, ${store}`, field) / med(`${b}, ${store}`, field);
    console.log(
      `| ${store} | ${ratio('claims', 'push', 'cpuUs').toFixed(2)}x | ${ratio('claims', 'push', 'outputsPerS').toFixed(2)}x | ${ratio('claims', 'sse', 'cpuUs').toFixed(2)}x | ${med(`claims, ${store}`, 'perPoll').toFixed(1)} |`,
    );
  }
  process.exit(0);
}

if (process.argv[2] === '--agent' || process.argv[2] === '--worker') process.on('SIGTERM', () => process.exit(0));
if (process.argv[2] === '--agent') await agent();
else if (process.argv[2] === '--worker') await worker(process.argv[3]);
else await main();
