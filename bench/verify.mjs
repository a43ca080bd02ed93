// CPU per delivery of what an adapter does before admission, in-process: verify the signature
// (and decrypt, where the platform encrypts) and parse the body, then, timed apart, normalize it
// to events. One case per adapter in bench/verify/<name>.mjs; the generic channel signed with
// Standard Webhooks (HMAC-SHA256 over id.timestamp.body) runs in the same rounds, for scale.
// A case file exports `channel` (one channel entry of the config file) and `delivery(i)`, which
// returns `{headers, body: Buffer, query?: URLSearchParams}` for the i-th delivery (distinct ids).
// An official SDK's file (bench/verify/sdk-*.mjs) exports `sdk`, one function per case it runs
// beside ({wecom: open}), which checks and decrypts a delivery of that case its SDK's way and
// returns the parsed message: it runs on the very same deliveries, and its result must equal
// what our parseBody returns for them before any timing.
// Deliveries are built before timing starts; each round runs every case and SDK, order rotated.
// Usage: node bench/verify.mjs [deliveries=20000] [rounds=5]   (BENCH_STEPS=1: each step's share too)
import { readdirSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { createHmac } from 'node:crypto';
import { median } from './servers.mjs';

const count = Number(process.argv[2] ?? 20_000);
const rounds = Number(process.argv[3] ?? 5);
const { loadConfig } = await import('../dist/service/configure.js');
const { Channels } = await import('../dist/service/channels.js');
const { parseJson } = await import('../dist/http/body.js');

const SECRET = 'whsec_' + Buffer.from('bench-generic-secret-0123456789').toString('base64');
const generic = {
  name: 'generic (Standard Webhooks)',
  channel: { id: 'generic', adapter: 'generic', secret: SECRET },
  delivery(i) {
    const body = Buffer.from(
      JSON.stringify({
        id: `m${i}`,
        sessionKey: `cli:${i}`,
        sender: { id: 'u1', name: 'User' },
        content: `hello ${i}`,
      }),
    );
    const id = `msg_${i}`;
    const ts = Math.floor(Date.now() / 1000);
    const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
    const signature = createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64');
    return {
      headers: { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${signature}` },
      body,
    };
  },
};
const cases = [generic];
const sdks = [];
for (const file of readdirSync(new URL('./verify/', import.meta.url))
  .filter((name) => name.endsWith('.mjs'))
  .sort()) {
  const mod = await import(new URL(`./verify/${file}`, import.meta.url));
  const name = mod.name ?? file.replace(/\.mjs$/, '');
  if (mod.sdk) for (const [of, open] of Object.entries(mod.sdk)) sdks.push({ name, of, open });
  else cases.push({ name, file: file.replace(/\.mjs$/, ''), channel: mod.channel, delivery: mod.delivery });
}

const config = loadConfig({
  env: {},
  file: { store: 'memory', logLevel: 'silent', channels: cases.map((c) => c.channel) },
});
const channels = new Channels(config);
const limits = { maxDepth: config.server.maxDepth, maxKeys: config.server.maxKeys };
const json = (bytes) => parseJson(bytes, limits.maxDepth, limits.maxKeys);
const built = cases.map((c) => ({ ...c, deliveries: Array.from({ length: count }, (_, i) => c.delivery(i)) }));

const rawDelivery = (raw) => ({
  headers: raw.headers,
  body: raw.body,
  query: raw.query ?? new URLSearchParams(),
  now: Date.now(),
});

/** Verify and parse every delivery, then normalize every body: CPU µs per delivery of each loop. */
async function run(c) {
  const { adapter } = channels.require(c.channel.id);
  const deliveries = c.deliveries.map(rawDelivery);
  const bodies = new Array(deliveries.length);
  let events = 0;
  const started = process.cpuUsage();
  for (let i = 0; i < deliveries.length; i++) {
    const delivery = deliveries[i];
    // A JWT channel's check is asynchronous (its keys fetched once, then cached): awaited, as the pipeline does.
    const verifying = adapter.verify(delivery);
    if (verifying) await verifying;
    bodies[i] = adapter.parseBody ? adapter.parseBody(delivery.body, limits, json) : json(delivery.body);
  }
  const parsed = process.cpuUsage(started);
  for (let i = 0; i < deliveries.length; i++) events += adapter.normalize(bodies[i], deliveries[i]).events.length;
  const normalized = process.cpuUsage(started);
  if (events < deliveries.length) throw new Error(`${c.name}: ${events} events from ${deliveries.length} deliveries`);
  const parse = parsed.user + parsed.system;
  return [parse / deliveries.length, (normalized.user + normalized.system - parse) / deliveries.length];
}

/** An SDK's check, decrypt and parse of every delivery of its case: CPU µs per delivery. */
function runSdk(s) {
  const deliveries = s.case.deliveries;
  let fields = 0;
  const started = process.cpuUsage();
  for (const raw of deliveries) fields += s.open(raw) === undefined ? 0 : 1;
  const used = process.cpuUsage(started);
  if (fields < deliveries.length) throw new Error(`${s.name}: nothing from ${deliveries.length - fields} deliveries`);
  return (used.user + used.system) / deliveries.length;
}

for (const s of sdks) {
  s.case = built.find((c) => c.file === s.of);
  if (!s.case) throw new Error(`${s.name}: no case bench/verify/${s.of}.mjs`);
  // The SDK must read the same message out of the same bytes as our adapter.
  const { adapter } = channels.require(s.case.channel.id);
  for (const raw of s.case.deliveries.slice(0, 3)) {
    const delivery = rawDelivery(raw);
    adapter.verify(delivery);
    const ours = adapter.parseBody(delivery.body, limits, json);
    if (!isDeepStrictEqual(s.open(raw), ours)) throw new Error(`${s.name} reads another message than ${s.case.name}`);
  }
}

const timed = [
  ...built.map((c) => ({ name: c.name, run: () => run(c) })),
  ...sdks.map((s) => ({ name: `${s.name} (${s.of})`, run: async () => runSdk(s) })),
];
for (const t of timed) await t.run(); // warm up
const results = new Map(timed.map((t) => [t.name, []]));
for (let round = 0; round < rounds; round++) {
  const order = timed.slice(round % timed.length).concat(timed.slice(0, round % timed.length));
  for (const t of order) results.get(t.name).push(await t.run());
}
// BENCH_STEPS=1: each case's time split into verify, parse and normalize (wall clock, one more round).
if (process.env.BENCH_STEPS) {
  console.log('| adapter | verify µs | parse µs | normalize µs |\n|---|---:|---:|---:|');
  for (const c of built) {
    const { adapter } = channels.require(c.channel.id);
    const spent = [0n, 0n, 0n];
    for (const raw of c.deliveries) {
      const delivery = {
        headers: raw.headers,
        body: raw.body,
        query: raw.query ?? new URLSearchParams(),
        now: Date.now(),
      };
      const t0 = process.hrtime.bigint();
      const verifying = adapter.verify(delivery);
      if (verifying) await verifying;
      const t1 = process.hrtime.bigint();
      const body = adapter.parseBody ? adapter.parseBody(delivery.body, limits, json) : json(delivery.body);
      const t2 = process.hrtime.bigint();
      adapter.normalize(body, delivery);
      spent[0] += t1 - t0;
      spent[1] += t2 - t1;
      spent[2] += process.hrtime.bigint() - t2;
    }
    const us = (ns) => (Number(ns) / 1000 / c.deliveries.length).toFixed(2);
    console.log(`| ${c.name} | ${us(spent[0])} | ${us(spent[1])} | ${us(spent[2])} |`);
  }
}
const medianOf = (name, part) => median(results.get(name).map((value) => (part === undefined ? value : value[part])));
const totalOf = (name) => median(results.get(name).map(([parse, normalize]) => parse + normalize));
const base = totalOf(generic.name);
console.log(`${count} deliveries x ${rounds} rounds, CPU µs per delivery (median round), Node ${process.version}`);
console.log('| adapter | verify + decrypt + parse | normalize | µs/delivery | vs generic |');
console.log('|---|---:|---:|---:|---:|');
for (const c of built) {
  const total = totalOf(c.name);
  console.log(
    `| ${c.name} | ${medianOf(c.name, 0).toFixed(2)} | ${medianOf(c.name, 1).toFixed(2)} | ${total.toFixed(2)} | ${(total / base).toFixed(2)}x |`,
  );
}
if (sdks.length > 0) {
  console.log('\n| channel | ours: verify + decrypt + parse | official SDK: check + decrypt + parse | ours ÷ SDK |');
  console.log('|---|---:|---:|---:|');
  for (const s of sdks) {
    const ours = medianOf(s.case.name, 0);
    const theirs = medianOf(`${s.name} (${s.of})`);
    console.log(
      `| ${s.case.name} | ${ours.toFixed(2)} | ${theirs.toFixed(2)} (${s.name}) | ${(ours / theirs).toFixed(2)}x |`,
    );
  }
}
