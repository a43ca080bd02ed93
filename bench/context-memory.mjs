// Memory per conversation kept as context (activation "mention"): G group conversations, each
// sent M messages of ~60 characters that address no bot, through the whole pipeline; every batch
// is kept as its conversation's context, trimmed to context.maxMessages. Then one conversation
// sent L messages: what it holds stays bounded. The heap and RSS per conversation are read
// after GC. `node --expose-gc bench/context-memory.mjs [memory|sqlite] [G=1000] [M=60] [L=100000]`
// after `npm run build`.
import { createIntake, loadConfig } from '../dist/index.js';
import pino from 'pino';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const kind = process.argv[2] ?? 'memory';
const G = Number(process.argv[3] ?? 1000);
const M = Number(process.argv[4] ?? 60);
const L = Number(process.argv[5] ?? 100_000);
const dir = mkdtempSync(join(tmpdir(), 'cm-'));
const config = loadConfig({
  env: {},
  cwd: dir,
  file: {
    store: kind === 'memory' ? 'memory' : `sqlite:${join(dir, 'x.db')}`,
    logLevel: 'silent',
    debounce: { windowMs: 0, maxWaitMs: 0 },
    activation: { group: 'mention' },
  },
});
const intake = await createIntake({ config, logger: pino({ level: 'silent' }), cwd: dir });
let n = 0;
/** Every batch flushed: past the flush grid's step (a deadline of now is armed on it), then settled. */
const flushed = async () => {
  await new Promise((r) => setTimeout(r, 60));
  await intake.settle();
};
const deliver = (group, member) =>
  intake.ingest('generic', {
    headers: { 'content-type': 'application/json' },
    query: new URLSearchParams(),
    now: Date.now(),
    body: Buffer.from(
      JSON.stringify({
        id: `m-${++n}`,
        sessionKey: `cli:group:${group}`,
        conversation: { type: 'group', id: String(group) },
        sender: { id: `u${member}`, name: 'Some Body' },
        content: `a message of about sixty characters, number ${n} of the run`,
      }),
    ),
  });
const settled = async () => {
  await flushed();
  global.gc();
  await new Promise((r) => setTimeout(r, 200));
  global.gc();
  return process.memoryUsage();
};

for (let i = 0; i < 2000; i++) {
  await deliver(-1 - (i % 20), i);
  if (i % 1000 === 999) await flushed();
}
const before = await settled();
for (let m = 0; m < M; m++) {
  for (let g = 0; g < G; g++) await deliver(g, m);
  await flushed();
}
const after = await settled();
const kept = (await intake.store.conversation('cli:group:0', Date.now())).context.length;
const per = (field) => Math.round((after[field] - before[field]) / G);
console.log(
  kind,
  `${G} conversations x ${M} messages, ${kept} kept each:`,
  'heap/conversation',
  per('heapUsed'),
  'B, rss/conversation',
  per('rss'),
  'B',
);

for (let i = 0; i < L; i++) {
  await deliver('long', i % 500);
  if (i % 1000 === 999) await flushed();
}
const long = await settled();
const held = await intake.store.conversation('cli:group:long', Date.now());
console.log(
  kind,
  `one conversation of ${L} messages: ${held.context.length} kept, ${held.dropped} dropped; heap +${Math.round((long.heapUsed - after.heapUsed) / 1024)} KiB`,
);
await intake.close();
