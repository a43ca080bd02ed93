// CPU per delivery of what an adapter does before admission, in-process: verify the signature
// (and decrypt, where the platform encrypts), parse the body, normalize it to events. One case
// per adapter in bench/verify/<name>.mjs; the baseline is the generic channel signed with
// Standard Webhooks (HMAC-SHA256 over id.timestamp.body), in the same rounds.
// A case file exports `channel` (one channel entry of the config file) and `delivery(i)`, which
// returns `{headers, body: Buffer, query?: URLSearchParams}` for the i-th delivery (distinct ids).
// Deliveries are built before timing starts; each round runs every case, order rotated.
// Usage: node bench/verify.mjs [deliveries=20000] [rounds=5]   (BENCH_STEPS=1: each step's share too)
import { readdirSync } from 'node:fs';
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
for (const file of readdirSync(new URL('./verify/', import.meta.url))
  .filter((name) => name.endsWith('.mjs'))
  .sort()) {
  const mod = await import(new URL(`./verify/${file}`, import.meta.url));
  cases.push({ name: mod.name ?? file.replace(/\.mjs$/, ''), channel: mod.channel, delivery: mod.delivery });
}

const config = loadConfig({
  env: {},
  file: { store: 'memory', logLevel: 'silent', channels: cases.map((c) => c.channel) },
});
const channels = new Channels(config);
const limits = { maxDepth: config.server.maxDepth, maxKeys: config.server.maxKeys };
const json = (bytes) => parseJson(bytes, limits.maxDepth, limits.maxKeys);
const built = cases.map((c) => ({ ...c, deliveries: Array.from({ length: count }, (_, i) => c.delivery(i)) }));

async function run(c) {
  const { adapter } = channels.require(c.channel.id);
  let events = 0;
  const started = process.cpuUsage();
  for (const raw of c.deliveries) {
    const delivery = {
      headers: raw.headers,
      body: raw.body,
      query: raw.query ?? new URLSearchParams(),
      now: Date.now(),
    };
    // A JWT channel's check is asynchronous (its keys fetched once, then cached): awaited, as the pipeline does.
    const verifying = adapter.verify(delivery);
    if (verifying) await verifying;
    const body = adapter.parseBody ? adapter.parseBody(delivery.body, limits, json) : json(delivery.body);
    events += adapter.normalize(body, delivery).events.length;
  }
  const used = process.cpuUsage(started);
  if (events < c.deliveries.length)
    throw new Error(`${c.name}: ${events} events from ${c.deliveries.length} deliveries`);
  return (used.user + used.system) / c.deliveries.length;
}

for (const c of built) await run(c); // warm up
const results = new Map(built.map((c) => [c.name, []]));
for (let round = 0; round < rounds; round++) {
  const order = built.slice(round % built.length).concat(built.slice(0, round % built.length));
  for (const c of order) results.get(c.name).push(await run(c));
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
const base = median(results.get(generic.name));
console.log(`${count} deliveries x ${rounds} rounds, CPU µs per delivery (median round), Node ${process.version}`);
console.log('| adapter | µs/delivery | vs generic |');
console.log('|---|---:|---:|');
for (const c of built) {
  const value = median(results.get(c.name));
  console.log(`| ${c.name} | ${value.toFixed(2)} | ${(value / base).toFixed(2)}x |`);
}
