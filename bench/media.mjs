// 50 concurrent 20 MB downloads from a loopback server: agent-intake's guarded fetchToFile
// (streaming, byte cap, sha256, sniff head) against a plain undici request piped to a file.
// Reports throughput and peak RSS growth (sampled every 10 ms).
// Usage: node bench/media.mjs [downloads=50] [megabytes=20]
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Agent, request } from 'undici';
import { fetchToFile } from '../dist/media/fetch.js';

const count = Number(process.argv[2] ?? 50);
const size = Number(process.argv[3] ?? 20) * 1024 * 1024;
const chunk = Buffer.alloc(64 * 1024, 7);

const server = createServer((_req, res) => {
  res.setHeader('content-length', String(size));
  let sent = 0;
  const pump = () => {
    while (sent < size) {
      sent += chunk.length;
      if (!res.write(chunk)) return res.once('drain', pump);
    }
    res.end();
  };
  pump();
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/file`;

async function measure(name, download) {
  const dir = mkdtempSync(join(tmpdir(), 'intake-media-bench-'));
  global.gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  const started = performance.now();
  await Promise.all(Array.from({ length: count }, (_, i) => download(join(dir, `f${i}`))));
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  rmSync(dir, { recursive: true, force: true });
  return { name, mbps: (count * size) / 1024 / 1024 / seconds, peakMb: (peak - base) / 1024 / 1024 };
}

const plainAgent = new Agent({ connections: count });
const baseline = await measure('plain undici request -> file', async (path) => {
  const { body } = await request(url, { dispatcher: plainAgent });
  await pipeline(body, createWriteStream(path));
});
const ours = await measure('agent-intake fetchToFile', (path) =>
  fetchToFile(url, path, {
    maxBytes: size + 1,
    timeoutMs: 120_000,
    retries: 0,
    allowHosts: [new URL(url).host],
    allowPorts: [],
  }),
);
server.close();

console.log(
  `\nmedia: ${count} concurrent downloads of ${size / 1024 / 1024} MB from loopback (node ${process.version})`,
);
console.log('| downloader | MB/s | peak RSS growth MB |\n|---|---:|---:|');
for (const r of [baseline, ours]) console.log(`| ${r.name} | ${Math.round(r.mbps)} | ${r.peakMb.toFixed(1)} |`);
process.exit(0);
