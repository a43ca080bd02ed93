import { createHmac } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureBytes } from '../../fixtures/index.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { readEvents } from '../../support/sse.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';

const APP_SECRET = 'wa-app-secret';
const sign = (body: Buffer | string) => `sha256=${createHmac('sha256', APP_SECRET).update(body).digest('hex')}`;

describe('WhatsApp Cloud API channel', () => {
  let service: Running;
  let graph: TestServer;
  beforeAll(async () => {
    graph = await serve((req, res) => {
      if (req.headers.authorization !== 'Bearer wa-token') {
        res.statusCode = 401;
        res.end('{"error":{"message":"bad token"}}');
        return;
      }
      if (req.url === '/v21.0/MEDIA123') {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            url: `http://127.0.0.1:${graph.port}/lookaside/MEDIA123`,
            mime_type: 'image/png',
            file_size: PNG.length,
            id: 'MEDIA123',
          }),
        );
        return;
      }
      if (req.url === '/lookaside/MEDIA123') {
        res.end(PNG);
        return;
      }
      res.statusCode = 404;
      res.end('{}');
    });
  });
  afterAll(() => graph.close());
  afterEach(async () => service?.stop());

  const start = () =>
    startService({
      debounce: { windowMs: 100, maxWaitMs: 400, maxMessages: 10 },
      media: { allowHosts: [`127.0.0.1:${graph.port}`] },
      channels: [
        {
          id: 'wa',
          adapter: 'whatsapp',
          appSecret: APP_SECRET,
          verifyToken: 'hub-token',
          accessToken: 'wa-token',
          graphBaseUrl: `http://127.0.0.1:${graph.port}/v21.0`,
        },
      ],
    });
  const post = (name: string, signature?: string) => {
    const body = fixtureBytes('whatsapp', name);
    return postJson(`${service.url}/webhooks/wa`, body.toString(), { 'x-hub-signature-256': signature ?? sign(body) });
  };

  it('answers the GET handshake with the challenge, and 403 for a wrong token', async () => {
    service = await start();
    const ok = await fetch(
      `${service.url}/webhooks/wa?hub.mode=subscribe&hub.verify_token=hub-token&hub.challenge=1158201444`,
    );
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/text\/plain/);
    expect(await ok.text()).toBe('1158201444');
    const bad = await fetch(`${service.url}/webhooks/wa?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1`);
    expect(bad.status).toBe(403);
  });

  it('echoes hub.challenge as text/plain with X-Content-Type-Options: nosniff, so a browser never renders it', async () => {
    service = await start();
    const page = '<html><script>alert(document.domain)</script></html>';
    const echo = await fetch(
      `${service.url}/webhooks/wa?${new URLSearchParams({ 'hub.mode': 'subscribe', 'hub.verify_token': 'hub-token', 'hub.challenge': page })}`,
    );
    expect([
      echo.status,
      echo.headers.get('content-type'),
      echo.headers.get('x-content-type-options'),
      await echo.text(),
    ]).toEqual([200, 'text/plain; charset=utf-8', 'nosniff', page]);
  });

  it('refuses bad, short and missing signatures with 401', async () => {
    service = await start();
    for (const signature of ['sha256=' + 'a'.repeat(64), 'sha256=ab', '']) {
      const response = signature
        ? await post('text.json', signature)
        : await postJson(`${service.url}/webhooks/wa`, fixtureBytes('whatsapp', 'text.json').toString());
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('bad_signature');
    }
  });

  it('turns every message of a delivery into an event and renders each type as text', async () => {
    service = await start();
    const seen: Array<{ sender: string; content: string }> = [];
    service.intake.on('chat.processedMessage', (m) => {
      seen.push({ sender: m.sender.id, content: m.content });
    });
    const notices: string[] = [];
    service.intake.on('chat.notice', (n) => {
      notices.push(`${n.detail}:${n.fields.emoji}:${n.fields.message_id}`);
    });
    const response = await post('multi.json');
    expect(response.body).toMatchObject({ accepted: 6, duplicates: 0 });
    await until(() => seen.length === 2 && notices.length === 1);
    expect(seen).toEqual(
      expect.arrayContaining([
        { sender: '16505551234', content: '订单 ORD-123' },
        {
          sender: '16505559999',
          content:
            'Location: Cafe, 1 Hacker Way (37.48, -122.15) Yes, please Contact: Carla Diaz +1 555 0100 Track order',
        },
      ]),
    );
    expect(notices).toEqual(['reaction:👍:wamid.OUT1']);
  });

  it('acknowledges receipts without making messages, and counts a retry once', async () => {
    service = await start();
    const receipts = await post('statuses.json');
    expect(receipts.status).toBe(200);
    expect(receipts.body).toEqual({ accepted: 0, duplicates: 0, events: [] });
    await post('text.json');
    const retry = await post('text.json');
    expect(retry.body.events).toEqual([{ id: 'wamid.HBgL1', verdict: 'duplicate' }]);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frame?.data).toMatchObject({
      sessionKey: 'wa:16505551234',
      sender: { id: '16505551234', name: 'Ana' },
      content: '帮我查一下',
      messageIds: ['wamid.HBgL1'],
      replyBot: { channel: 'wa', botId: '1065' },
    });
    expect(service.intake.metrics.channelStats().wa).toMatchObject({ ignored: 2, received: 2, deduped: 1 });
  });

  it('downloads media by id through the Graph API with the access token', async () => {
    service = await start();
    const frames = readEvents(`${service.url}/v1/events`, 1, { onOpen: () => post('image.json') });
    const [frame] = await frames;
    expect(frame?.data.content).toBe('the receipt');
    expect(frame?.data.media).toMatchObject([{ type: 'image', mime: 'image/png', bytes: PNG.length }]);
    expect(frame?.data.mediaErrors).toEqual([]);
  });
});
