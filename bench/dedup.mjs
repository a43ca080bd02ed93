// Dedup structures at 10^5 and 10^6 live keys: agent-intake's ClaimTable (hashed keys, FIFO
// expiry) against the seed's two sketches: a Set with one timer per id, and a Map scanned on
// every message. Time per claim and heap bytes per key. Run with --expose-gc.
// Usage: node --expose-gc bench/dedup.mjs
import { ClaimTable } from '../dist/store/local/claim-table.js';
import { claimKey } from '../dist/dedup/claims.js';

const sizes = [100_000, 1_000_000];
const idOf = (i) => `wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTNBNTZCMT${i}`;

// Heap plus typed-array backing stores (ClaimTable keeps its keys in typed arrays, which live
// outside the JS heap), so every structure is charged for all the memory it holds.
function heap() {
  global.gc();
  global.gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

function measure(name, n, make, claim, opsAtSize) {
  const before = heap();
  const structure = make();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) claim(structure, idOf(i), i);
  const fillNs = Number(process.hrtime.bigint() - t0);
  const bytes = (heap() - before) / n;
  // Time per operation once the structure holds n keys: fresh ids plus repeats.
  const t1 = process.hrtime.bigint();
  for (let i = 0; i < opsAtSize; i++) claim(structure, idOf(n + i), n + i);
  const opNs = Number(process.hrtime.bigint() - t1) / opsAtSize;
  return { name, n, fillNsPerOp: fillNs / n, opNs, bytes, structure };
}

const rows = [];
for (const n of sizes) {
  // A thousand claims per millisecond, so every key is still inside its 300 s TTL at the end.
  const ours = measure(
    'ClaimTable (agent-intake)',
    n,
    () => new ClaimTable(300_000, 2_000_000),
    (t, id, i) => t.claim(claimKey('id', 'wa', id), Math.floor(i / 1000)),
    100_000,
  );
  rows.push(ours);
  const timers = measure(
    'Set + setTimeout per id (seed)',
    n,
    () => new Set(),
    (set, id) => {
      if (set.has(id)) return false;
      set.add(id);
      setTimeout(() => set.delete(id), 300_000).unref();
      return true;
    },
    100_000,
  );
  rows.push(timers);
  const scan = measure(
    'Map scanned per message (seed)',
    n,
    () => new Map(),
    (map, id, now) => map.set(id, now),
    0,
  );
  // The seed's fuzzy sketch walks the whole map on every message; time a few such walks.
  const walks = n >= 1_000_000 ? 20 : 100;
  const t = process.hrtime.bigint();
  for (let i = 0; i < walks; i++) {
    const now = Date.now();
    for (const [key, ts] of scan.structure) if (now - ts > 2000 && ts < 0) scan.structure.delete(key);
    scan.structure.set(idOf(n + i), n + i);
  }
  scan.opNs = Number(process.hrtime.bigint() - t) / walks;
  rows.push(scan);
  for (const r of rows.slice(-3)) r.structure = undefined;
  if (typeof global.gc === 'function') global.gc();
}

console.log(`\ndedup structures (node ${process.version})`);
console.log('| structure | live keys | ns/op at that size | bytes/key (heap + typed arrays) |\n|---|---:|---:|---:|');
for (const r of rows)
  console.log(
    `| ${r.name} | ${r.n.toLocaleString('en')} | ${Math.round(r.opNs).toLocaleString('en')} | ${Math.round(r.bytes)} |`,
  );
for (const n of sizes) {
  const ours = rows.find((r) => r.n === n && r.name.startsWith('ClaimTable'));
  const seed = rows.find((r) => r.n === n && r.name.startsWith('Set'));
  console.log(
    `at ${n.toLocaleString('en')} keys: ClaimTable uses ${((ours.bytes / seed.bytes) * 100).toFixed(0)}% of the Set+timer sketch's heap`,
  );
}
process.exit(0);
