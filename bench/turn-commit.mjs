// The store's side of agent turns alone: CPU per message of admit + claim + commit, each message
// of a new session, with the commit plain (turns off) or under `collect` (a turn opened per
// output: the turn bookkeeping, and on SQLite its row), 20 messages per turn of the event loop.
// Blocks of each alternate in one process,
// so a busy machine slows both alike; the median block is reported.
// Usage: node bench/turn-commit.mjs [messages per block=2000] [blocks=9]
// BENCH_COMPARE=<folder with the dist/ of another build> runs that build's stores instead.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const perBlock = Number(process.argv[2] ?? 2000);
const blocks = Number(process.argv[3] ?? 9);
const dist = process.env.BENCH_COMPARE
  ? resolve(process.env.BENCH_COMPARE, 'dist')
  : new URL('../dist', import.meta.url).pathname;
const { item, draft } = await import(join(dist, 'testing/index.js'));
const { MemoryStore } = await import(join(dist, 'store/local/memory.js'));
const { SqliteStore } = await import(join(dist, 'store/sqlite/sqlite.js'));
const dir = mkdtempSync(join(tmpdir(), 'turn-commit-'));
/** Bytes this process handed to write() (SQLite's WAL frames and checkpoints): steady where CPU time is not. */
const written = () => Number(/wchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? 0);
const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)];

let n = 0;
/** `perBlock` messages, 20 per turn of the event loop (the SQLite store commits a turn's writes together, as under load). */
async function block(store, mode) {
  const rule = { mode, maxMs: 120_000, maxHeld: 20 };
  const start = process.cpuUsage();
  const bytes = written();
  for (let i = 0; i < perBlock; i += 20) {
    const at = n + 1;
    const keys = Array.from({ length: 20 }, () => `bench:user-${++n}`);
    await Promise.all(
      keys.map((sessionKey) => store.admit([item(`m-${sessionKey}`, { sessionKey, at, closeNow: true })], at)),
    );
    const batches = await store.claimDue(at, 1000, 20);
    await Promise.all(
      batches.map((batch) =>
        store.commitTurn(batch, draft(`o-${batch.sessionKey}`, 'none', batch.sessionKey, at), at, rule),
      ),
    );
  }
  const used = process.cpuUsage(start);
  return { cpu: (used.user + used.system) / perBlock, bytes: (written() - bytes) / perBlock };
}

console.log(
  `store commit path, each message a new session, ${perBlock} per block, median of ${blocks} blocks (${dist})`,
);
console.log(
  '| store | turns off µs/msg | collect µs/msg | collect ÷ off | bytes written/msg, off / collect |\n|---|---:|---:|---:|---:|',
);
for (const [name, open] of [
  ['memory', () => new MemoryStore()],
  ['sqlite', () => new SqliteStore(join(dir, `s${Date.now()}.db`), { now: 0 })],
]) {
  const store = await open();
  const off = [];
  const on = [];
  await block(store, 'off');
  await block(store, 'collect');
  for (let b = 0; b < blocks; b++) {
    off.push(await block(store, 'off'));
    on.push(await block(store, 'collect'));
  }
  await store.close();
  const cpu = (blocks_) => median(blocks_.map((b) => b.cpu));
  const bytes = (blocks_) => Math.round(median(blocks_.map((b) => b.bytes)));
  console.log(
    `| ${name} | ${cpu(off).toFixed(1)} | ${cpu(on).toFixed(1)} | ${(cpu(on) / cpu(off)).toFixed(2)}x | ${bytes(off)} / ${bytes(on)} |`,
  );
}
rmSync(dir, { recursive: true, force: true });
