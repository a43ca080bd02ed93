// What longer exact-id windows cost: bytes per live claim in each store, measured, then the
// live claims and bytes a channel holds at 10, 100 and 1,000 messages a second with each
// platform's window (live claims = min(rate x window, dedup.maxKeys)).
// Memory store: heap + typed arrays per key of the ClaimTable (see bench/dedup.mjs; SQLite keeps
// the same table in memory too); SQLite: the claim log (its rows and index) as pages in the file, with the same items admitted without
// claims subtracted; Redis: INFO used_memory, likewise (bench/redis.mjs section 4 does the
// same at 10^4). The window does not change the bytes per claim, only how many are live.
// Usage: node --expose-gc bench/claim-windows.mjs [claims=100000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startRedisServer } from './servers.mjs';

const N = Number(process.argv[2] ?? 100_000);
const { SqliteStore } = await import('../dist/store/sqlite/sqlite.js');
const { RedisStore } = await import('../dist/store/redis/redis.js');
const { ClaimTable } = await import('../dist/store/local/claim-table.js');
const { claimKey } = await import('../dist/dedup/claims.js');

const WINDOW = 7 * 3_600_000;
const item = (n, claims) => ({
  claims: claims ? [{ key: claimKey('id', 'ch', `msg-${n}`), space: 'id:ch', ttlMs: WINDOW, maxKeys: 10_000_000 }] : [],
  part: {
    debounceKey: `s${n}\u0000u`,
    receivedAt: 0,
    event: {
      id: `e${n}`,
      kind: 'message',
      channel: 'ch',
      adapter: 'generic',
      namespace: 'ch',
      conversation: { type: 'private', id: `u${n}` },
      sessionKey: `s${n}`,
      sender: { id: `u${n}` },
      segments: [],
      text: 'hi',
      media: [],
      mentions: [],
      timestamp: 1,
    },
  },
  rule: { windowMs: 3_600_000, maxWaitMs: 3_600_000, maxMessages: 3 },
  closeNow: false,
});
const admitAll = async (store, claims, now) => {
  for (let n = 0; n < N; n += 500)
    await store.admit(
      Array.from({ length: Math.min(500, N - n) }, (_, i) => item(n + i, claims)),
      now,
    );
};

async function sqliteBytes(claims) {
  const dir = mkdtempSync(join(tmpdir(), 'claims-'));
  const now = Date.now();
  const store = await SqliteStore.open(join(dir, 'x.db'), { now });
  await admitAll(store, claims, now);
  await store.close();
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(join(dir, 'x.db'), { readonly: true });
  const { bytes } = db
    .prepare(
      'SELECT (page_count - freelist_count) * page_size AS bytes FROM pragma_page_count, pragma_freelist_count, pragma_page_size',
    )
    .get();
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return bytes;
}

async function redisBytes(server, claims) {
  const admin = new Redis(server.url);
  await admin.flushall();
  const used = async () => Number(/used_memory:(\d+)/.exec(String(await admin.info('memory')))?.[1]);
  const store = await RedisStore.open(server.url, { clock: 'caller' });
  const before = await used();
  await admitAll(store, claims, Date.now());
  const after = await used();
  await store.close();
  admin.disconnect();
  return after - before;
}

function memoryBytes() {
  const heap = () => {
    global.gc?.();
    global.gc?.();
    const u = process.memoryUsage();
    return u.heapUsed + u.arrayBuffers;
  };
  const before = heap();
  const table = new ClaimTable(WINDOW, 10_000_000);
  for (let n = 0; n < N; n++) table.claim(claimKey('id', 'ch', `msg-${n}`), 0);
  const bytes = (heap() - before) / N;
  if (table.count !== N) throw new Error(`memory: ${table.count} claims live, expected ${N}`);
  return bytes;
}

const perClaim = { memory: memoryBytes() };
perClaim.sqlite = ((await sqliteBytes(true)) - (await sqliteBytes(false))) / N;
const server = await startRedisServer();
perClaim.redis = ((await redisBytes(server, true)) - (await redisBytes(server, false))) / N;
server.stop();

console.log(
  `bytes per live claim over ${N} claims, Node ${process.version}${global.gc ? '' : ' (run with --expose-gc for the memory row)'}`,
);
console.log('| store | bytes / claim |\n|---|---:|');
for (const [name, bytes] of Object.entries(perClaim)) console.log(`| ${name} | ${Math.round(bytes)} |`);

const windows = [
  ['generic, OneBot, LINE, Telegram, QQ (5 min)', 300_000],
  ['Slack (10 min)', 600_000],
  ['DingTalk (1 h)', 3_600_000],
  ['Feishu (7.1 h)', 25_560_000],
  ['WhatsApp (7 days)', 7 * 24 * 3_600_000],
];
const MAX_KEYS = 1_000_000;
const mb = (bytes) => (bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${(bytes / 1e6).toFixed(1)} MB`);
console.log(
  `\nlive claims per channel (capped at dedup.maxKeys = ${MAX_KEYS}) and their bytes: memory (both local stores) / SQLite file / Redis`,
);
console.log('| window | 10 msg/s | 100 msg/s | 1,000 msg/s |\n|---|---|---|---|');
for (const [name, ms] of windows) {
  const cells = [10, 100, 1000].map((rate) => {
    const live = Math.min((rate * ms) / 1000, MAX_KEYS);
    const capped = (rate * ms) / 1000 > MAX_KEYS ? ' (capped)' : '';
    return `${live.toLocaleString('en-US')}${capped}: ${mb(live * perClaim.memory)} / ${mb(live * perClaim.sqlite)} / ${mb(live * perClaim.redis)}`;
  });
  console.log(`| ${name} | ${cells.join(' | ')} |`);
}
