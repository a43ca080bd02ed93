import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { isAbsolute, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { postJson, startService, type Running } from '../support/helpers.js';
import { readEvents } from '../support/sse.js';
import { ManualClock } from '../support/manual-clock.js';
import { PNG, serve, type TestServer } from '../support/servers.js';

describe('media on the real server', () => {
  let service: Running;
  let host: TestServer;
  const held: ServerResponse[] = [];
  beforeAll(async () => {
    host = await serve((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path === '/a.png' || path === '/blocked.png') {
        res.setHeader('content-type', 'application/octet-stream');
        res.end(PNG);
      } else if (path === '/doc') {
        res.setHeader('content-type', 'text/plain');
        res.end('plain words');
      } else if (path === '/held.png') held.push(res);
      else {
        res.statusCode = 404;
        res.end();
      }
    });
  });
  afterAll(() => host.close());
  afterEach(async () => service?.stop());

  const start = (
    media: Record<string, unknown> = {},
    debounce: Record<string, unknown> = { windowMs: 100, maxWaitMs: 400 },
    clock?: ManualClock,
  ) =>
    startService(
      { debounce, media: { allowHosts: [`127.0.0.1:${host.port}`], timeoutMs: 20_000, retries: 1, ...media } },
      clock ? { clock } : {},
    );

  it('downloads attachments into the session folder and lists them in the processed message', async () => {
    // Time moves only when the test says so: both posts land in one window however slow the machine.
    const clock = new ManualClock();
    service = await start({}, { windowMs: 100, maxWaitMs: 400 }, clock);
    const url = `http://127.0.0.1:${host.port}`;
    expect(
      (
        await postJson(`${service.url}/webhooks/generic`, {
          sessionKey: '../../etc/cli:ann',
          content: 'look',
          mediaUrl: `${url}/a.png?name=evil.exe`,
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await postJson(`${service.url}/webhooks/generic`, {
          sessionKey: '../../etc/cli:ann',
          content: 'and this',
          media: [{ url: `${url}/doc` }, { url: `${url}/missing.png` }],
        })
      ).status,
    ).toBe(200);
    await clock.advance(100);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    const message = frame?.data;
    expect(message.content).toBe('look and this');
    expect(message.media).toHaveLength(2);
    const [image, doc] = message.media;
    expect(image).toMatchObject({
      type: 'image',
      mime: 'image/png',
      bytes: PNG.length,
      sha256: createHash('sha256').update(PNG).digest('hex'),
    });
    expect(image.path).toMatch(/\.png$/);
    expect(doc).toMatchObject({ type: 'document', mime: 'text/plain', bytes: 11 });
    expect(doc.path).toMatch(/\.txt$/);
    const absolute = isAbsolute(image.path) ? image.path : join(service.dir, image.path);
    expect(absolute.startsWith(join(service.dir, 'media'))).toBe(true);
    expect(readFileSync(absolute)).toEqual(PNG);
    expect(statSync(join(absolute, '..')).mode & 0o777).toBe(0o700);
    expect(message.mediaErrors).toEqual([{ url: `${url}/missing.png`, reason: 'http: HTTP 404' }]);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`inbox_media_downloaded_bytes_total\\{channel="generic"\\} ${PNG.length + 11}`));
    expect(metrics).toMatch(/inbox_media_downloads_total\{channel="generic",result="failed"\} 1/);
  });

  it('starts downloading while the debounce window is open, so the flush does not wait window + download', async () => {
    // Windows far longer than the test: nothing flushes unless the test says so.
    service = await start({}, { windowMs: 60_000, maxWaitMs: 60_000 });
    const frames = readEvents(`${service.url}/v1/events`, 1, {
      onOpen: async () => {
        await postJson(`${service.url}/webhooks/generic`, {
          sessionKey: 'cli:slow',
          content: 'pic',
          mediaUrl: `http://127.0.0.1:${host.port}/held.png`,
        });
        // The download reached the media host with the window still open for another minute...
        await host.arrived('/held.png');
        for (const res of held.splice(0)) res.end(PNG);
        // ...so a command closing the window finds it done or under way, not about to start.
        await postJson(`${service.url}/webhooks/generic`, { sessionKey: 'cli:slow', content: '/go' });
      },
    });
    const [frame] = await frames;
    expect(frame?.data.media).toHaveLength(1);
    expect(frame?.data.media[0].type).toBe('image');
  });

  it('keeps only the first attachment of a batch in "first" mode', async () => {
    const clock = new ManualClock();
    service = await start({}, { windowMs: 100, maxWaitMs: 400, media: 'first' }, clock);
    const url = `http://127.0.0.1:${host.port}`;
    expect(
      (await postJson(`${service.url}/webhooks/generic`, { sessionKey: 'cli:f', mediaUrl: `${url}/a.png` })).status,
    ).toBe(200);
    expect(
      (
        await postJson(`${service.url}/webhooks/generic`, {
          sessionKey: 'cli:f',
          mediaUrl: `${url}/doc`,
          content: 'two',
        })
      ).status,
    ).toBe(200);
    await clock.advance(100);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frame?.data.merged).toBe(2);
    expect(frame?.data.media.map((m: { type: string }) => m.type)).toEqual(['image']);
  });

  it('refuses a blocked URL as a media error and still delivers the message', async () => {
    service = await start({ allowHosts: [] });
    const frames = readEvents(`${service.url}/v1/events`, 1, {
      onOpen: () =>
        postJson(`${service.url}/webhooks/generic`, {
          sessionKey: 'cli:b',
          content: 'see',
          mediaUrl: `http://127.0.0.1:${host.port}/blocked.png`,
        }),
    });
    const [frame] = await frames;
    expect(frame?.data.content).toBe('see');
    expect(frame?.data.media).toEqual([]);
    expect(frame?.data.mediaErrors[0].reason).toMatch(/^blocked: port \d+ is not allowed/);
    expect(host.hits.get('/blocked.png') ?? 0).toBe(0);
  });

  it('caps attachments per message', async () => {
    service = await start({ maxPerMessage: 1 });
    const url = `http://127.0.0.1:${host.port}`;
    const frames = readEvents(`${service.url}/v1/events`, 1, {
      onOpen: () =>
        postJson(`${service.url}/webhooks/generic`, {
          sessionKey: 'cli:c',
          media: [{ url: `${url}/a.png` }, { url: `${url}/doc` }],
        }),
    });
    const [frame] = await frames;
    expect(frame?.data.media).toHaveLength(1);
    expect(frame?.data.mediaErrors).toEqual([
      { url: `${url}/doc`, reason: 'too many attachments: more than media.maxPerMessage (1)' },
    ]);
  });
});
