import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { tempDir } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';
import { partOf, stageFor } from './parts.js';
import { countingConnections, endless, PNG, serve, type TestServer } from '../support/servers.js';

/** Every file left under `dir`, relative paths. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1));
}

describe('media stage limits against local servers', () => {
  let host: TestServer;
  const held: ServerResponse[] = [];
  const url = (path: string) => `http://127.0.0.1:${host.port}${path}`;
  const settings = (extra: Record<string, unknown> = {}) => ({
    allowHosts: [`127.0.0.1:${host.port}`],
    retries: 0,
    ...extra,
  });

  beforeAll(async () => {
    host = await serve((req, res, n) => {
      const path = (req.url ?? '').split('?')[0];
      if (path === '/photo.png') res.end(PNG);
      else if (path === '/slow') {
        // Headers and a first chunk, then nothing: a download in progress until the test lets go.
        res.writeHead(200, { 'content-type': 'image/png' });
        res.write(PNG.subarray(0, 8));
        held.push(res);
      } else if (path === '/busy') {
        if (n === 1) {
          res.statusCode = 503;
          res.setHeader('retry-after', '5');
          res.end();
        } else res.end(PNG);
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
  });
  afterAll(() => host.close());
  const releaseHeld = () => {
    for (const res of held.splice(0)) res.destroy();
  };

  it('keeps the connections of error bodies within media.concurrency, and cuts the bodies', async () => {
    const sent = { bytes: 0 };
    const errors = await serve((_req, res) => endless(res, 500, sent));
    const sockets = countingConnections();
    const stage = stageFor(
      tempDir().path,
      systemClock,
      { allowHosts: [`127.0.0.1:${errors.port}`], retries: 0, concurrency: 2, perSenderConcurrency: 2 },
      sockets.connections,
    );
    const parts = Array.from({ length: 10 }, (_, i) =>
      partOf(`e${i}`, [{ url: `http://127.0.0.1:${errors.port}/e${i}` }]),
    );
    const results = await stage.collect(parts);
    expect(results.flatMap((r) => r.errors.map((e) => e.reason))).toEqual(Array(10).fill('http: HTTP 500'));
    expect(sockets.peak()).toBe(2);
    expect(sockets.open()).toBe(0);
    await errors.drained();
    await errors.close();
    // The server notices a reset a moment after the client's next connection: one closing per slot at most.
    // Drained bodies (the old behaviour) stay open and pile up to all 10.
    expect(errors.connections().peak).toBeLessThanOrEqual(4);
    expect(sent.bytes).toBeLessThan(10 * 16 * 1024 * 1024);
    await stage.close();
  });

  it("lets another sender's photo through while one sender's slow downloads fill their share", async () => {
    const dir = tempDir().path;
    const stage = stageFor(dir, new ManualClock(), settings({ concurrency: 2, timeoutMs: 60_000 }));
    const slowSender = partOf(
      'slow',
      [1, 2, 3, 4].map((i) => ({ url: url(`/slow?i=${i}`) })),
    );
    const hits = host.hits.get('/slow') ?? 0;
    stage.begin(slowSender);
    await host.arrived('/slow', hits + 1);
    const [photo] = await stage.collect([partOf('other', [{ url: url('/photo.png') }])]);
    // One sender gets half of media.concurrency (1 of 2): the other slot stayed free for someone else.
    expect(photo?.media).toHaveLength(1);
    expect(host.hits.get('/slow')).toBe(hits + 1);
    await stage.close();
    releaseHeld();
  });

  it('counts queue time in media.timeoutMs: an attachment queued for its whole budget fails without connecting', async () => {
    const dir = tempDir().path;
    const clock = new ManualClock();
    const stage = stageFor(dir, clock, settings({ concurrency: 1, timeoutMs: 10_000 }));
    const first = partOf('first', [{ url: url('/slow?q') }]);
    const queued = partOf('queued', [{ url: url('/photo.png?queued') }]);
    const hits = { slow: host.hits.get('/slow') ?? 0, photo: host.hits.get('/photo.png') ?? 0 };
    stage.begin(first);
    await host.arrived('/slow', hits.slow + 1);
    stage.begin(queued);
    clock.tick(10_000);
    const [slow, photo] = await stage.collect([first, queued]);
    expect(slow?.errors[0]?.reason).toMatch(/^timeout: /);
    expect(photo?.errors[0]?.reason).toBe(
      'timeout: no complete download within media.timeoutMs (10000 ms), queue time included',
    );
    expect(host.hits.get('/photo.png') ?? 0).toBe(hits.photo);
    expect(files(dir)).toEqual([]);
    await stage.close();
    releaseHeld();
  });

  it('gives the slot back while waiting out Retry-After', async () => {
    const dir = tempDir().path;
    const clock = new ManualClock();
    const stage = stageFor(dir, clock, settings({ concurrency: 1, retries: 1, timeoutMs: 60_000 }));
    const busy = partOf('busy', [{ url: url('/busy') }]);
    stage.begin(busy);
    await clock.armed(5_000);
    // The only slot is free while /busy waits: another sender's photo downloads meanwhile.
    const [photo] = await stage.collect([partOf('other', [{ url: url('/photo.png?meanwhile') }])]);
    expect(photo?.media).toHaveLength(1);
    expect(host.hits.get('/busy')).toBe(1);
    clock.tick(5_000);
    const [retried] = await stage.collect([busy]);
    expect(retried?.media).toHaveLength(1);
    expect(host.hits.get('/busy')).toBe(2);
    await stage.close();
  });

  it('aborts downloads on close without waiting for them, leaves no partial file, and keeps the batch for the next start', async () => {
    const dir = tempDir().path;
    const stage = stageFor(dir, new ManualClock(), settings({ concurrency: 2, timeoutMs: 60_000 }));
    const part = partOf('closing', [{ url: url('/slow?c1') }, { url: url('/slow?c2') }]);
    const hits = host.hits.get('/slow') ?? 0;
    stage.begin(part);
    await host.arrived('/slow', hits + 1);
    // The fake clock never moves: only the abort can end these downloads.
    await stage.close();
    await expect(stage.collect([part])).rejects.toMatchObject({ name: 'MediaError', kind: 'aborted' });
    await expect(stage.collect([partOf('late', [{ url: url('/photo.png?late') }])])).rejects.toMatchObject({
      kind: 'aborted',
    });
    expect(files(dir)).toEqual([]);
    releaseHeld();
  });
});
