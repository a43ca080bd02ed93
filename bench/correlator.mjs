// Correlation throughput and heap per group at maxGroups = 10^5: the correlation step of the
// admit path (bot directory builds the key and delivery, the embedded stores' group table
// decides and records), against a naive correlator that builds keys with JSON.stringify and
// scans every group for expiry per call.
// Usage: node --expose-gc bench/correlator.mjs
import { Bots } from '../dist/correlate/bots.js';
import { CorrelationGroups } from '../dist/store/local/correlations.js';

/** What memory and SQLite stores do per correlated item inside admit (without the row writes). */
class StoreCorrelation {
  constructor(maxGroups) {
    this.bots = new Bots({
      crossAdapter: true,
      messageWindowMs: 15 * 60_000,
      eventWindowMs: 60_000,
      correlatedNamespaces: new Set(['qq']),
    });
    this.groups = new CorrelationGroups(maxGroups);
  }
  observe(event) {
    const t = clock.now();
    const step = this.bots.step(event, t);
    const decision = this.groups.decide(step, t);
    if (decision.seen) {
      if (!decision.retry) this.groups.append(decision.group, step.delivery);
      return { duplicate: true };
    }
    this.groups.add(decision.group, t);
    return { duplicate: false };
  }
}

const GROUPS = 100_000;
const OPS = 200_000;
const clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
let now = 1_700_000_000_000;

function message(i, bot) {
  return {
    id: `m${i}`,
    kind: 'message',
    detail: 'group',
    channel: `qq-${bot}`,
    adapter: 'onebot',
    namespace: 'qq',
    botId: String(bot),
    conversation: { type: 'group', id: String(100 + (i % 500)) },
    sessionKey: `qq:group:${100 + (i % 500)}`,
    sender: { id: String(10_000 + (i % 2000)) },
    platformId: `${bot}:${i}`,
    mentions: [],
    media: [],
    timestamp: 1_700_000_000,
    raw: undefined,
    segments: [
      { type: 'at', data: { qq: '1' } },
      { type: 'text', data: { text: ` message number ${i} ` } },
      { type: 'face', data: { id: '14' } },
    ],
    text: `message number ${i}`,
  };
}

class NaiveCorrelator {
  groups = new Map();
  observe(event) {
    const t = clock.now();
    for (const [key, group] of this.groups) if (group.expiresAt <= t) this.groups.delete(key);
    const key = JSON.stringify([
      'm',
      event.conversation.type,
      event.conversation.id,
      event.sender.id,
      event.segments.filter((s) => s.type !== 'reply'),
    ]);
    const group = this.groups.get(key);
    if (group) {
      group.deliveries.push({ channel: event.channel, botId: event.botId });
      return { duplicate: true };
    }
    this.groups.set(key, { expiresAt: t + 15 * 60_000, deliveries: [{ channel: event.channel, botId: event.botId }] });
    if (this.groups.size > GROUPS) this.groups.delete(this.groups.keys().next().value);
    return { duplicate: false };
  }
}

function heap() {
  global.gc();
  global.gc();
  return process.memoryUsage().heapUsed;
}

function run(name, correlator, ops) {
  const before = heap();
  for (let i = 0; i < GROUPS; i++) correlator.observe(message(i, 1)); // fill to maxGroups
  const perGroup = (heap() - before) / GROUPS;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) {
    now += 1;
    correlator.observe(message(GROUPS + (i >> 1), 1 + (i & 1))); // each new message seen by two bots
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return { name, perSecond: ops / seconds, perGroup };
}

const ours = run('correlation step (agent-intake, embedded stores)', new StoreCorrelation(GROUPS), OPS);
const naive = run('naive: JSON.stringify keys, scan per call', new NaiveCorrelator(), 2_000);
console.log(`\ncorrelator at maxGroups = ${GROUPS.toLocaleString('en')} (node ${process.version})`);
console.log('| correlator | observe()/s | heap bytes/group |\n|---|---:|---:|');
for (const r of [ours, naive])
  console.log(`| ${r.name} | ${Math.round(r.perSecond).toLocaleString('en')} | ${Math.round(r.perGroup)} |`);
