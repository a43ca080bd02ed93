// Agent calls avoided by activation (contract §12): one busy QQ group (OneBot, signed HTTP) of
// `members` people, run through the composed service twice on the same messages, with
// activation.group "always" (every batch an output, today's default) and "mention" (only what
// addresses the bot; the rest is context the next output carries). 2% of the messages address
// the bot: 1% start with the wake word, 1% @ it. A member sometimes sends a second fragment
// half a second later (20%), which debounce merges into one batch. Time is a fake clock, one
// message every `gapMs`, with the default debounce (1.5 s) and context bounds (50 messages, 1 h,
// 8,000 characters). It counts, it does not time: outputs per 1,000 messages, and the context
// each output carries (messages, and those left out as contextDropped).
// Usage: node bench/activation.mjs [messages=2000] [members=200] [gapMs=1000]   (after npm run build)
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import pino from 'pino';
import { fromDist } from './dist.mjs';

const messages = Number(process.argv[2] ?? 2000);
const members = Number(process.argv[3] ?? 200);
const gapMs = Number(process.argv[4] ?? 1000);
const dist = new URL('../dist', import.meta.url).pathname;
const { createIntake } = await fromDist(dist, 'service/intake.js');
const SELF = 10001;
const GROUP = 555;
const SECRET = 'bench';

async function main() {
  console.log(
    `\nactivation in a busy group: ${messages} messages of ${members} members, one every ${gapMs} ms (fake clock), 2% addressed (node ${process.version})`,
  );
  console.log(
    '| activation.group | outputs | per 1,000 messages | context per output, mean / max | contextDropped per output, mean / max | triggers |\n|---|---:|---:|---:|---:|---|',
  );
  const rows = [];
  for (const group of ['always', 'mention']) rows.push(await run(group));
  for (const row of rows) console.log(row.line);
  console.log(
    `agent calls avoided: ${(100 * (1 - rows[1].outputs / rows[0].outputs)).toFixed(1)}% (${rows[0].outputs} -> ${rows[1].outputs})`,
  );
}

async function run(group) {
  const clock = new FakeClock(1_718_000_000_000);
  const dir = mkdtempSync(join(tmpdir(), 'intake-activation-'));
  const intake = await createIntake({
    configFile: {
      store: 'memory',
      logLevel: 'silent',
      activation: { group, wakeWords: ['bot'] },
      channels: [{ id: 'qq', adapter: 'onebot', secret: SECRET, namespace: 'qq' }],
    },
    env: {},
    logger: pino({ level: 'silent' }),
    clock,
    cwd: dir,
  });
  const random = mulberry32(46);
  let id = 0;
  let sent = 0;
  const say = async (user, segments) => {
    const body = Buffer.from(JSON.stringify(groupMessage(++id, user, segments, clock.now())));
    const signature = `sha1=${createHmac('sha1', SECRET).update(body).digest('hex')}`;
    const reply = await intake.ingest('qq', {
      headers: { 'x-signature': signature },
      body,
      query: new URLSearchParams(),
      now: clock.now(),
    });
    if (reply.status >= 300) throw new Error(`message ${id} refused: ${JSON.stringify(reply.body)}`);
    sent += 1;
  };
  for (let n = 0; n < messages; n++) {
    const user = 20_000 + Math.floor(random() * members);
    const roll = random();
    const words = `今天的发布说明谁看过了 第${n}条 ${'多'.repeat(Math.floor(random() * 40))}`;
    // 1% wake word, 1% @ the bot, the rest chatter.
    const segments = roll < 0.01 ? [text(`bot ${words}`)] : roll < 0.02 ? [at(SELF), text(` ${words}`)] : [text(words)];
    await say(user, segments);
    if (random() < 0.2) {
      // A second fragment of the same member, inside the debounce window: merged into one batch.
      await clock.advance(500);
      await say(user, [text(`还有 ${n}`)]);
      await clock.advance(gapMs - 500);
    } else await clock.advance(gapMs);
  }
  // Past every window: the last batches flush.
  for (let i = 0; i < 20; i++) await clock.advance(1000);
  const records = await intake.store.outboxAfter(0, sent + 1);
  const outputs = records
    .map((record) => JSON.parse(record.body))
    .filter((output) => output.type === 'chat.processedMessage');
  await intake.close();
  rmSync(dir, { recursive: true, force: true });
  const carried = outputs.map((output) => output.context?.length ?? 0);
  const dropped = outputs.map((output) => output.contextDropped ?? 0);
  const triggers = new Map();
  for (const output of outputs) triggers.set(output.trigger, (triggers.get(output.trigger) ?? 0) + 1);
  const mean = (values) => (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);
  const max = (values) => values.reduce((a, b) => Math.max(a, b), 0);
  const list = [...triggers].map(([trigger, count]) => `${trigger} ${count}`).join(', ');
  return {
    outputs: outputs.length,
    line: `| ${group} | ${outputs.length} of ${sent} messages | ${((1000 * outputs.length) / sent).toFixed(1)} | ${mean(carried).toFixed(1)} / ${max(carried)} | ${mean(dropped).toFixed(1)} / ${max(dropped)} | ${list} |`,
  };
}

function groupMessage(messageId, user, segments, now) {
  return {
    time: Math.floor(now / 1000),
    self_id: SELF,
    post_type: 'message',
    message_type: 'group',
    sub_type: 'normal',
    message_id: messageId,
    group_id: GROUP,
    user_id: user,
    sender: { user_id: user, nickname: `member ${user}` },
    message: segments,
  };
}

function text(value) {
  return { type: 'text', data: { text: value } };
}

function at(qq) {
  return { type: 'at', data: { qq: String(qq) } };
}

/** A seeded generator (mulberry32): both modes see the same messages. */
function mulberry32(seed) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Time that moves only when told: every debounce window and timer of the service runs on it. */
class FakeClock {
  #time;
  #seq = 0;
  #timers = new Map();

  constructor(start) {
    this.#time = start;
  }

  now = () => this.#time;

  setTimeout = (fn, ms) => {
    const seq = ++this.#seq;
    this.#timers.set(seq, { at: this.#time + Math.max(0, ms), seq, fn });
    return seq;
  };

  clearTimeout = (handle) => {
    this.#timers.delete(handle);
  };

  /** Move time forward by `ms`, firing due timers in order and letting the flushes they start finish. */
  async advance(ms) {
    const until = this.#time + ms;
    await settle();
    for (let next = this.#due(until); next; next = this.#due(until)) {
      this.#timers.delete(next.seq);
      this.#time = Math.max(this.#time, next.at);
      next.fn();
      await settle();
    }
    this.#time = until;
    await settle();
  }

  #due(until) {
    let first;
    for (const timer of this.#timers.values())
      if (timer.at <= until && (!first || timer.at < first.at || (timer.at === first.at && timer.seq < first.seq)))
        first = timer;
    return first;
  }
}

async function settle() {
  for (let i = 0; i < 5; i++) await turn();
}

// Last: the clock's class is declared above.
await main();
