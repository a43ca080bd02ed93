// CPU per message of the pipeline alone (no HTTP): ingest through the real Pipeline, then wait
// until every message has been flushed to the outbox, with each store. Every message is a new
// session, as in bench/ingest.mjs. CPU is process.cpuUsage(), all threads (GC included).
// Usage: node bench/pipeline.mjs [messages=60000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createIntake } from '../dist/intake.js';

const N = Number(process.argv[2] ?? 60_000);

async function measure(store) {
  const dir = mkdtempSync(join(tmpdir(), 'intake-pipeline-'));
  const intake = await createIntake({ configFile: { store: store === 'memory' ? 'memory' : `sqlite:${join(dir, 'b.db')}`, logLevel: 'silent' }, env: {}, logger: pino({ level: 'silent' }), cwd: dir });
  let flushed = 0;
  intake.pipeline.outlet.subscribe(() => { flushed++; });
  const before = process.cpuUsage();
  const pending = [];
  for (let n = 0; n < N; n++) {
    const body = Buffer.from(JSON.stringify({ id: `b${n}`, sessionKey: `bench:u${n}`, sender: { id: `u${n}`, name: 'Bench' }, content: `帮我查一下订单 ORD-${n} 的状态`, timestamp: 1710234567 }));
    pending.push(intake.pipeline.ingest('generic', { headers: {}, body, query: new URLSearchParams(), now: Date.now() }));
    if (pending.length === 50) {
      await Promise.all(pending);
      pending.length = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  await Promise.all(pending);
  while (flushed < N) await new Promise((resolve) => setTimeout(resolve, 20));
  const cpu = process.cpuUsage(before);
  await intake.close();
  rmSync(dir, { recursive: true, force: true });
  return (cpu.user + cpu.system) / N;
}

console.log(`\npipeline without HTTP, ${N.toLocaleString('en')} messages, each a new session (node ${process.version})`);
console.log('| store | CPU µs per message (ingest + flush) |\n|---|---:|');
for (const store of ['memory', 'sqlite']) console.log(`| ${store} | ${(await measure(store)).toFixed(1)} |`);
