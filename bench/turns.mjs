// Agent turns: the pipeline's CPU per message (no HTTP) with turns.mode "collect" beside "off",
// in the same rounds, as bench/pipeline.mjs measures it (steady rate, fresh child per setup,
// setups rotated over rounds, median round). "each message a new session": every batch opens a
// turn (the bookkeeping of turns on the commit path); "1000 sessions": a session gets a message
// about every 1000/rate s, so after its first output most batches are held and merged (the
// hold and the release path). The goal is collect within 1.1x of off.
// Usage: node bench/turns.mjs [rate=4000] [seconds=4] [rounds=3]
// BENCH_COMPARE=<folder with the dist/ of another build> adds its four new-session rows (off and
// collect, memory and SQLite), run in the same rounds.
import { fork } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cpuTicks, median } from './servers.mjs';
import { distPath, fromDist } from './dist.mjs';

const setups = [
  ['memory, turns off', { store: 'memory' }],
  ['memory, collect, each message a new session', { store: 'memory', turns: 'collect' }],
  ['memory, collect, 1000 sessions (most held)', { store: 'memory', turns: 'collect', sessions: 1000 }],
  ['sqlite, turns off', { store: 'sqlite' }],
  ['sqlite, collect, each message a new session', { store: 'sqlite', turns: 'collect' }],
  ['sqlite, collect, 1000 sessions (most held)', { store: 'sqlite', turns: 'collect', sessions: 1000 }],
];
const compare = process.env.BENCH_COMPARE;
if (compare && process.argv[2] !== '--child') {
  const dist = resolve(compare, 'dist');
  distPath(dist, 'service/intake.js');
  const name = existsSync(join(compare, 'COMMIT'))
    ? readFileSync(join(compare, 'COMMIT'), 'utf8').trim()
    : 'compared build';
  setups.push(
    [`${name}, memory, turns off`, { store: 'memory', dist }],
    [`${name}, memory, collect, each message a new session`, { store: 'memory', turns: 'collect', dist }],
    [`${name}, sqlite, turns off`, { store: 'sqlite', dist }],
    [`${name}, sqlite, collect, each message a new session`, { store: 'sqlite', turns: 'collect', dist }],
  );
}
if (process.argv[2] === '--child') await child(JSON.parse(process.argv[3]));
else await parent();

async function parent() {
  const rate = Number(process.argv[2] ?? 4000);
  const seconds = Number(process.argv[3] ?? 4);
  const rounds = Number(process.argv[4] ?? 3);
  const results = new Map(setups.map(([name]) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < setups.length; i++) {
      const [name, setup] = setups[(i + round) % setups.length];
      results.get(name).push(await run({ ...setup, rate, seconds }));
    }
  }
  console.log(
    `\nagent turns, pipeline without HTTP, steady ${rate}/s for ${seconds}s, median of ${rounds} rounds (node ${process.version})`,
  );
  console.log('| setup | main thread µs/msg | all threads µs/msg | each round (main) |\n|---|---:|---:|---|');
  for (const [name] of setups) {
    const r = results.get(name);
    console.log(
      `| ${name} | ${median(r.map((x) => x.main)).toFixed(1)} | ${median(r.map((x) => x.all)).toFixed(1)} | ${r.map((x) => x.main.toFixed(1)).join(', ')} |`,
    );
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

async function child({ store, turns, sessions, rate, seconds, dist = new URL('../dist', import.meta.url).pathname }) {
  const { default: pino } = await import('pino');
  const { createIntake } = await fromDist(dist, 'service/intake.js');
  const dir = mkdtempSync(join(tmpdir(), 'intake-pipeline-'));
  const intake = await createIntake({
    configFile: {
      store: store === 'memory' ? 'memory' : `sqlite:${join(dir, 'b.db')}`,
      logLevel: 'silent',
      ...(turns ? { turns: { mode: turns } } : {}),
    },
    env: {},
    logger: pino({ level: 'silent' }),
    cwd: dir,
  });
  const ingest = (delivery) => intake.ingest('generic', delivery);
  const mainTicks = () => cpuTicks(process.pid).main;
  const query = new URLSearchParams();
  let sent = 0;
  let mark;
  const start = Date.now();
  const warmUp = 2;
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
        const body = Buffer.from(
          JSON.stringify({
            id: `p-${sent}`,
            sessionKey: `bench:user-${sessions ? sent % sessions : sent}`,
            sender: { id: `u${sent}`, name: 'Bench' },
            content: `帮我查一下订单 ORD-${sent} 的状态`,
            timestamp: 1710234567,
          }),
        );
        void ingest({ headers: {}, body, query, now: Date.now() });
      }
    }, 10);
  });
  const count = sent - mark.sent;
  const cpu = process.cpuUsage(mark.cpu);
  const result = { main: ((mainTicks() - mark.main) * 10_000) / count, all: (cpu.user + cpu.system) / count };
  await intake.close();
  rmSync(dir, { recursive: true, force: true });
  process.send(result, () => process.exit(0));
}
