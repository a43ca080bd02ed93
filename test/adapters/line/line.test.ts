import { createHmac } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureBytes } from '../../fixtures/index.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { readEvents } from '../../support/sse.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';

const SECRET = 'line-channel-secret';
const sign = (body: string) => createHmac('sha256', SECRET).update(body).digest('base64');

describe('LINE channel', () => {
  let service: Running;
  let data: TestServer;
  beforeAll(async () => {
    data = await serve((req, res) => {
      if (req.url === '/v2/bot/message/6001/content' && req.headers.authorization === 'Bearer line-token') {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
      } else {
        res.statusCode = 404;
        res.end('{"message":"Not found"}');
      }
    });
  });
  afterAll(() => data.close());
  afterEach(async () => service?.stop());

  const start = () =>
    startService({
      debounce: { windowMs: 100, maxWaitMs: 400 },
      correlation: { noticeHoldMs: 50 },
      media: { allowHosts: [`127.0.0.1:${data.port}`] },
      channels: [
        {
          id: 'line',
          adapter: 'line',
          channelSecret: SECRET,
          accessToken: 'line-token',
          apiDataBaseUrl: `http://127.0.0.1:${data.port}`,
        },
      ],
    });
  const post = (body: string, signature = sign(body)) =>
    postJson(`${service.url}/webhooks/line`, body, { 'x-line-signature': signature });
  const file = (name: string) => fixtureBytes('line', name).toString();

  it('refuses bad, short and missing signatures with 401', async () => {
    service = await start();
    expect((await post(file('message.json'), sign('other'))).status).toBe(401);
    expect((await post(file('message.json'), 'abc')).status).toBe(401);
    expect((await postJson(`${service.url}/webhooks/line`, file('message.json'))).status).toBe(401);
  });

  it('accepts the empty verification request', async () => {
    service = await start();
    const response = await post('{"destination":"Ubot","events":[]}');
    expect(response.status).toBe(200);
  });

  it('counts a redelivery once', async () => {
    service = await start();
    expect((await post(file('message.json'))).body.accepted).toBe(1);
    const redelivery = file('message.json').replace('"isRedelivery":false', '"isRedelivery":true');
    expect((await post(redelivery)).body.events).toEqual([{ id: '01H810YECXQQZ37VAXPF6H9E6T', verdict: 'duplicate' }]);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frame?.data).toMatchObject({
      sessionKey: 'line:U4af',
      content: 'Hello',
      replyBot: { channel: 'line', botId: 'Ubot' },
    });
  });

  it('handles several events of user, group and room sources, with stickers and locations as text and follow/join as notices', async () => {
    service = await start();
    const messages: Array<[string, string]> = [];
    const notices: string[] = [];
    service.intake.on('chat.processedMessage', (m) => {
      messages.push([m.sessionKey, m.content]);
    });
    service.intake.on('chat.notice', (n) => {
      notices.push(`${n.detail}:${n.sessionKey}`);
    });
    expect((await post(file('multi.json'))).body.accepted).toBe(4);
    await until(() => messages.length === 2 && notices.length === 2);
    expect(messages).toEqual(
      expect.arrayContaining([
        ['line:group:Cgrp', '(sticker: Happy, Smile)'],
        ['line:group:Rroom', 'Location: Tower, Tokyo (35.65, 139.74)'],
      ]),
    );
    expect(notices.sort()).toEqual(['follow:line:U999', 'join:line:group:Cgrp']);
  });

  it('downloads content through the content API with the access token', async () => {
    service = await start();
    const frames = readEvents(`${service.url}/v1/events`, 1, { onOpen: () => post(file('image.json')) });
    const [frame] = await frames;
    expect(frame?.data.media).toMatchObject([{ type: 'image', mime: 'image/png', bytes: PNG.length }]);
  });
});
