// CPU per message of the pipeline alone (no HTTP), in a steady state: messages arrive at a fixed
// rate, every one a new session, and wait out the debounce window as under load. Each setup runs
// in a fresh child process; setups are rotated over rounds and reported by their median round.
// Rows: the memory and SQLite stores with the default config, the memory store with
// debounce.windowMs 0 (what holding every message through the window costs), and a floor that only
// parses, validates and normalizes (what the bare-Koa baseline's JSON.parse grows into).
// CPU is read from /proc: the main thread alone, and all threads (GC helpers included).
// BENCH_COMPARE=<folder with the dist/ of another build> adds its memory and SQLite rows, run in
// the same rounds (see bench/servers.mjs).
// BENCH_ACTIVATION=1: activation (contract §12) `mention` against `always`, each store: group
// messages of four busy conversations, every sender a member who speaks again only after the
// debounce window (so every message is a batch of its own), 2% starting with the wake word. In
// `mention` mode the other 98% are kept as context (one store step closing the buffer, in place
// of the outbox commit) and each output carries up to context.maxMessages of them.
// Usage: node bench/pipeline.mjs [rate=8000] [seconds=6] [rounds=3]   (BENCH_TURNS=1: turns off vs collect;
// BENCH_REVISIONS=1: second thoughts off vs on;
// BENCH_ACTIVATION=1: activation always vs mention, at a rate every setup keeps up with, e.g. 2000;
// BENCH_WARM=<seconds> of warm-up before counting, 2 by default)
import { fork } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cpuTicks, median } from './servers.mjs';
import { distPath, fromDist } from './dist.mjs';

const setups = [
  ['memory store', { store: 'memory' }],
  ['sqlite store', { store: 'sqlite' }],
  ['memory store, debounce.windowMs 0', { store: 'memory', debounce: { windowMs: 0 } }],
  ['parse + validate + normalize only', { store: 'memory', floor: true }],
];
// BENCH_TURNS=1: turns.mode off against collect, side by side (every output opens a turn of its session).
if (process.env.BENCH_TURNS) {
  setups.splice(
    0,
    setups.length,
    ['memory store, turns off', { store: 'memory' }],
    ['memory store, turns collect', { store: 'memory', turns: { mode: 'collect' } }],
    ['sqlite store, turns off', { store: 'sqlite' }],
    ['sqlite store, turns collect', { store: 'sqlite', turns: { mode: 'collect' } }],
  );
}
// BENCH_ACTIVATION=1: activation.group "always" (the default) against "mention", same messages and wake word.
const activation = Boolean(process.env.BENCH_ACTIVATION);
const always = { group: 'always', wakeWords: ['bot'] };
const mention = { group: 'mention', wakeWords: ['bot'] };
if (activation) {
  setups.splice(
    0,
    setups.length,
    ['memory store, activation always', { store: 'memory', activation: always }],
    ['memory store, activation mention', { store: 'memory', activation: mention }],
    ['sqlite store, activation always', { store: 'sqlite', activation: always }],
    ['sqlite store, activation mention', { store: 'sqlite', activation: mention }],
  );
}
// BENCH_REVISIONS=1: second thoughts (contract §13) tracked (the default) against off, each store:
// every flush reads the session's revisions with its conversation, and every output's message
// ids are remembered for a later recall or edit.
const revisions = Boolean(process.env.BENCH_REVISIONS);
if (revisions) {
  setups.splice(
    0,
    setups.length,
    ['memory store, revisions off', { store: 'memory', revisions: { enabled: false } }],
    ['memory store, revisions on', { store: 'memory', revisions: { enabled: true } }],
    ['sqlite store, revisions off', { store: 'sqlite', revisions: { enabled: false } }],
    ['sqlite store, revisions on', { store: 'sqlite', revisions: { enabled: true } }],
  );
}
const compare = process.env.BENCH_COMPARE;
if (compare && process.argv[2] !== '--child') {
  const dist = resolve(compare, 'dist');
  distPath(dist, 'service/intake.js');
  const name = existsSync(join(compare, 'COMMIT'))
    ? readFileSync(join(compare, 'COMMIT'), 'utf8').trim()
    : 'compared build';
  const compared = activation ? { activation: mention } : {};
  const suffix = activation ? ', activation mention' : '';
  setups.push(
    [`${name}, memory store${suffix}`, { store: 'memory', dist, ...compared }],
    [`${name}, sqlite store${suffix}`, { store: 'sqlite', dist, ...compared }],
  );
}

if (process.argv[2] === '--child') await child(JSON.parse(process.argv[3]));
else await parent();

async function parent() {
  const rate = Number(process.argv[2] ?? 8000);
  const seconds = Number(process.argv[3] ?? 6);
  const rounds = Number(process.argv[4] ?? 3);
  const results = new Map(setups.map(([name]) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < setups.length; i++) {
      const [name, setup] = setups[(i + round) % setups.length];
      results.get(name).push(await run({ ...setup, rate, seconds }));
    }
  }
  const shape = activation
    ? 'group messages of 4 conversations, 2% addressed by a wake word'
    : 'each message a new session';
  console.log(
    `\npipeline without HTTP, steady ${rate}/s for ${seconds}s, ${shape}, median of ${rounds} rounds (node ${process.version})`,
  );
  console.log('| setup | main thread µs/msg | all threads µs/msg | each round (main) |\n|---|---:|---:|---|');
  for (const [name] of setups) {
    const r = results.get(name);
    console.log(
      `| ${name} | ${median(r.map((x) => x.main)).toFixed(1)} | ${median(r.map((x) => x.all)).toFixed(1)} | ${r.map((x) => x.main.toFixed(1)).join(', ')} |`,
    );
  }
  if (revisions) {
    for (const store of ['memory', 'sqlite']) {
      const base = results.get(`${store} store, revisions off`);
      const ratios = results.get(`${store} store, revisions on`).map((x, i) => x.main / base[i].main);
      console.log(
        `${store}: revisions on ÷ off, main thread ${median(ratios).toFixed(2)}x (${ratios.map((x) => x.toFixed(2)).join(', ')})`,
      );
    }
  }
  if (activation) {
    // Each round's mention over the same round's always (rounds are adjacent in time), then the median.
    for (const store of ['memory', 'sqlite']) {
      const base = results.get(`${store} store, activation always`);
      const ratios = results.get(`${store} store, activation mention`).map((x, i) => x.main / base[i].main);
      const outputs = results.get(`${store} store, activation mention`).map((x) => x.emitted / x.count);
      console.log(
        `${store}: mention ÷ always, main thread ${median(ratios).toFixed(2)}x (${ratios.map((x) => x.toFixed(2)).join(', ')}); outputs per message in mention ${median(outputs).toFixed(3)}`,
      );
    }
  }
}

function run(setup) {
  return new Promise((resolve, reject) => {
    const child = fork(new URL(import.meta.url).pathname, ['--child', JSON.stringify(setup)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('message', resolve);
    child.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`bench child exited with ${code}`))));
  });
}

async function child({
  store,
  debounce,
  turns,
  activation,
  revisions,
  floor,
  rate,
  seconds,
  dist = new URL('../dist', import.meta.url).pathname,
}) {
  const { default: pino } = await import('pino');
  const { createIntake } = await fromDist(dist, 'service/intake.js');
  const { parseJson } = await import(join(dist, 'http/body.js'));
  const { createAdapter } = await import(join(dist, 'adapters/index.js'));
  const dir = mkdtempSync(join(tmpdir(), 'intake-pipeline-'));
  const intake = await createIntake({
    configFile: {
      store: store === 'memory' ? 'memory' : `sqlite:${join(dir, 'b.db')}`,
      logLevel: 'silent',
      ...(debounce ? { debounce } : {}),
      ...(turns ? { turns } : {}),
      ...(activation ? { activation } : {}),
      ...(revisions ? { revisions } : {}),
    },
    env: {},
    logger: pino({ level: 'silent' }),
    cwd: dir,
  });
  const adapter = createAdapter(intake.config.channels[0]);
  const ingest = floor
    ? (delivery) => adapter.normalize(parseJson(delivery.body, 32), delivery)
    : (delivery) => intake.ingest('generic', delivery);
  const mainTicks = () => cpuTicks(process.pid).main;
  const query = new URLSearchParams();
  let sent = 0;
  let mark;
  const start = Date.now();
  // BENCH_WARM=<seconds>: a longer warm-up reaches the steady state of a process that has run a
  // while, its bounded maps full (50,000 recent senders fill in 12.5 s at 4,000/s).
  const warmUp = Number(process.env.BENCH_WARM ?? 2);
  await new Promise((resolve) => {
    const timer = setInterval(() => {
      const elapsed = (Date.now() - start) / 1000;
      if (elapsed >= warmUp && !mark) mark = { main: mainTicks(), cpu: process.cpuUsage(), sent };
      if (elapsed >= warmUp + seconds) {
        clearInterval(timer);
        resolve();
        return;
      }
      // Catch up to the rate, but never more than 30 ms of messages in one tick.
      const due = Math.min(Math.floor(elapsed * rate) - sent, rate * 0.03);
      for (let i = 0; i < due; i++, sent++) {
        const body = Buffer.from(JSON.stringify(activation ? groupMessage(sent) : message(sent)));
        void ingest({ headers: {}, body, query, now: Date.now() });
      }
    }, 10);
  });
  const count = sent - mark.sent;
  const cpu = process.cpuUsage(mark.cpu);
  const result = { main: ((mainTicks() - mark.main) * 10_000) / count, all: (cpu.user + cpu.system) / count, count };
  // Outputs of the whole run (warm-up included) per message sent, to show what mode ran.
  if (activation) result.emitted = ((await intake.store.outboxAfter(0, sent + 1)).length * count) / sent;
  await intake.close();
  rmSync(dir, { recursive: true, force: true });
  process.send(result, () => process.exit(0));
}

/** A direct message: its own session. */
function message(n) {
  return {
    id: `p-${n}`,
    sessionKey: `bench:user-${n}`,
    sender: { id: `u${n}`, name: 'Bench' },
    content: `帮我查一下订单 ORD-${n} 的状态`,
    timestamp: 1710234567,
  };
}

/**
 * A message in one of four busy groups. 20,000 members take turns, so a member speaks again
 * 20,000 messages later, past the debounce window at these rates: every batch is one message.
 */
function groupMessage(n) {
  const group = n % 4;
  return {
    id: `g-${n}`,
    sessionKey: `bench:group-${group}`,
    conversation: { type: 'group', id: `group-${group}` },
    sender: { id: `m${n % 20_000}`, name: 'Member' },
    content: n % 50 === 0 ? `bot 帮我查一下订单 ORD-${n} 的状态` : `订单 ORD-${n} 今天发货了吗`,
    timestamp: 1710234567,
  };
}
