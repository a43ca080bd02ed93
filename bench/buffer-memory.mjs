// Memory per open debounce buffer, for the default of debounce.maxOpenBuffers: N sessions with
// one ~60-character message each, through the whole pipeline, a window long enough that none
// closes. `node --expose-gc bench/buffer-memory.mjs [memory|sqlite] [N]` after `npm run build`.
import { createIntake, loadConfig } from '../dist/index.js';
import pino from 'pino';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const kind = process.argv[2] ?? 'memory';
const N = Number(process.argv[3] ?? 50000);
const dir = mkdtempSync(join(tmpdir(), 'mb-'));
const config = loadConfig({
  env: {},
  cwd: dir,
  file: {
    store: kind === 'memory' ? 'memory' : `sqlite:${join(dir, 'x.db')}`,
    logLevel: 'silent',
    debounce: { windowMs: 3_600_000, maxWaitMs: 3_600_000 },
  },
});
const intake = await createIntake({ config, logger: pino({ level: 'silent' }), cwd: dir });
const deliver = (i) =>
  intake.ingest('generic', {
    headers: { 'content-type': 'application/json' },
    query: new URLSearchParams(),
    now: Date.now(),
    body: Buffer.from(
      JSON.stringify({
        id: `m-${i}`,
        sessionKey: `cli:user-${i}`,
        sender: { id: `u${i}`, name: 'Some Body' },
        content: `a message of about sixty characters, number ${i} of the run`,
      }),
    ),
  });
for (let i = 0; i < 2000; i++) await deliver(-i - 1);
global.gc();
await new Promise((r) => setTimeout(r, 200));
global.gc();
const before = process.memoryUsage();
for (let i = 0; i < N; i++) {
  await deliver(i);
}
global.gc();
await new Promise((r) => setTimeout(r, 200));
global.gc();
const after = process.memoryUsage();
console.log(
  kind,
  'buffers',
  await intake.store.openBuffers(),
  'heap/buffer',
  Math.round((after.heapUsed - before.heapUsed) / N),
  'rss/buffer',
  Math.round((after.rss - before.rss) / N),
  'external+ab/buffer',
  Math.round((after.external + after.arrayBuffers - before.external - before.arrayBuffers) / N),
);
await intake.close();
