import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { feishuSignature } from '../../../src/adapters/feishu/descriptor.js';
import type { ProcessedMessage } from '../../../src/events/output.js';
import { fixture } from '../../fixtures/index.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';

const TOKEN = 'verification-token-1';
const KEY = 'feishu-encrypt-key-e2e';
const APP = 'cli_a1b2c3';
const HOUR = 3_600_000;

/** A body as Feishu sends it with an Encrypt Key: `{"encrypt"}`, and its signed headers. */
function sealed(event: unknown, timestamp: string, nonce = 'abc'): { body: string; headers: Record<string, string> } {
  const iv = randomBytes(16);
  const cipher = createCipheriv('aes-256-cbc', createHash('sha256').update(KEY).digest(), iv);
  const body = JSON.stringify({
    encrypt: Buffer.concat([iv, cipher.update(JSON.stringify(event), 'utf8'), cipher.final()]).toString('base64'),
  });
  return {
    body,
    headers: {
      'x-lark-request-timestamp': timestamp,
      'x-lark-request-nonce': nonce,
      'x-lark-signature': feishuSignature(timestamp, nonce, KEY, Buffer.from(body)),
    },
  };
}

describe('a Feishu channel on the real server', () => {
  let service: Running;
  let clock: ManualClock;
  let api: TestServer;
  beforeAll(async () => {
    // Feishu's open platform on loopback: the tenant token and the message-resource download.
    api = await serve((req, res) => {
      if (req.url === '/open-apis/auth/v3/tenant_access_token/internal') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ code: 0, msg: 'ok', tenant_access_token: 't-tenant', expire: 7200 }));
        return;
      }
      if (
        req.url === '/open-apis/im/v1/messages/om_img1/resources/img_v2_abc?type=image' &&
        req.headers.authorization === 'Bearer t-tenant'
      ) {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
        return;
      }
      res.statusCode = 400;
      res.end('{"code":99991663,"msg":"Invalid access token"}');
    });
  });
  afterAll(() => api.close());
  afterEach(async () => service?.stop());

  const start = async () => {
    clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 400 },
        // the trail keeps what the 7 hours the retry spans (trace.retentionMs is 1 h by default)
        trace: { retentionMs: 8 * 3_600_000 },
        media: { allowHosts: [`127.0.0.1:${api.port}`], retries: 0 },
        channels: [
          {
            id: 'fs',
            adapter: 'feishu',
            verificationToken: TOKEN,
            encryptKey: KEY,
            appId: APP,
            appSecret: 'app-secret',
            botOpenId: 'ou_bot',
            apiBaseUrl: `http://127.0.0.1:${api.port}`,
          },
        ],
      },
      { clock },
    );
    const messages: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (m) => {
      messages.push(m);
    });
    return messages;
  };
  const post = (delivery: { body: string; headers: Record<string, string> }) =>
    postJson(`${service.url}/webhooks/fs`, delivery.body, delivery.headers);
  /** An event as Feishu pushes it now: encrypted, signed at the service clock's second. */
  const push = (event: unknown) => sealed(event, String(Math.floor(clock.now() / 1000)));
  const quiet = () => clock.advance(200);
  const outbox = () => service.intake.store.outboxAfter(0, 10);
  /** A fixture event with this event id, message and text, stamped now. */
  const textEvent = (name: string, eventId: string, messageId: string, text: string) => {
    const event = fixture('feishu', name) as any;
    event.header = { ...event.header, event_id: eventId, token: TOKEN };
    event.event.message = {
      ...event.event.message,
      message_id: messageId,
      create_time: String(clock.now()),
      content: JSON.stringify({ text }),
    };
    return event;
  };

  it('answers the encrypted URL verification, merges fragments, and emits a retry 7 hours later once', async () => {
    const messages = await start();
    const verification = await post(push({ challenge: 'c-123', token: TOKEN, type: 'url_verification' }));
    expect(verification).toMatchObject({ status: 200, body: { challenge: 'c-123' } });
    expect([verification.headers.get('content-type'), verification.headers.get('x-content-type-options')]).toEqual([
      'application/json; charset=utf-8',
      'nosniff',
    ]);
    const event = textEvent('text-p2p.json', 'ev-1', 'om_1', '帮我查一下');
    expect(await post(push(event))).toMatchObject({ status: 200, body: {} });
    expect(await post(push(textEvent('text-p2p.json', 'ev-2', 'om_2', '订单 ORD-123')))).toMatchObject({
      status: 200,
      body: {},
    });
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'feishu:oc_p2p1',
      content: '帮我查一下订单 ORD-123',
      merged: 2,
      messageIds: ['ev-1', 'ev-2'],
      sourceChannel: 'feishu',
      channel: 'fs',
      sender: { id: 'ou_ana' },
      replyBot: { channel: 'fs', botId: APP },
    });
    // Feishu's last retry comes ~7.1 h after the first delivery, signed anew: the channel's window holds it.
    await clock.advance(7 * HOUR);
    expect(await post(push(event))).toMatchObject({ status: 200, body: {} });
    await quiet();
    expect(messages).toHaveLength(1);
    const trace = (await (await fetch(`${service.url}/v1/trace/ev-1`)).json()) as any;
    expect(trace.arrivals.map((a: any) => [a.id, a.channel, a.verdict])).toEqual([
      ['ev-1', 'fs', 'accepted'],
      ['ev-2', 'fs', 'accepted'],
      ['ev-1', 'fs', 'duplicate'],
    ]);
    expect(trace.outputs).toMatchObject([{ messageIds: ['ev-1', 'ev-2'] }]);
  });

  it('puts a group @ message in the group session with our bot mentioned, and downloads an image with the tenant token', async () => {
    const messages = await start();
    const group = textEvent('text-group-mention.json', 'ev-g', 'om_g', '@_user_1 status?');
    expect((await post(push(group))).status).toBe(200);
    const image = fixture('feishu', 'image.json') as any;
    image.header.token = TOKEN;
    image.event.message.create_time = String(clock.now());
    expect((await post(push(image))).status).toBe(200);
    await quiet();
    await until(() => messages.length === 2);
    const byKey = new Map(messages.map((m) => [m.sessionKey, m]));
    expect(byKey.get('feishu:group:oc_group1')).toMatchObject({
      content: '@Intake Bot status?',
      mentionedBots: [{ channel: 'fs', botId: APP }],
      conversation: { type: 'group', id: 'oc_group1' },
    });
    const withImage = byKey.get('feishu:oc_p2p1')!;
    expect(withImage.mediaErrors).toEqual([]);
    expect(withImage.media).toMatchObject([{ type: 'image', mime: 'image/png', bytes: PNG.length }]);
    const stored = join(service.dir, withImage.media[0]!.path);
    expect(existsSync(stored) && readFileSync(stored).equals(PNG)).toBe(true);
    expect(api.hits.get('/open-apis/auth/v3/tenant_access_token/internal')).toBe(1);
  });

  it('refuses a signed delivery replayed after its event_id window as stale_timestamp: one message, nothing recorded twice', async () => {
    const messages = await start();
    const captured = push(textEvent('text-p2p.json', 'ev-r', 'om_r', '帮我查一下'));
    expect(await post(captured)).toMatchObject({ status: 200, body: {} });
    await quiet();
    await until(() => messages.length === 1);
    // Inside the hour the captured bytes verify, and event_id makes them a duplicate.
    await clock.advance(HOUR - 1000);
    expect(await post(captured)).toMatchObject({ status: 200, body: {} });
    // Past the 7.1 h window the event_id is forgotten: only the timestamp tells the replay.
    await clock.advance(7.2 * HOUR);
    const replay = await post(captured);
    expect(replay.status).toBe(401);
    expect(replay.body.error).toMatchObject({
      code: 'stale_timestamp',
      message: expect.stringMatching(
        /^Stale timestamp on channel "fs": X-Lark-Request-Timestamp is 2\d{4} s old, more than the 1 h allowed/,
      ),
    });
    await quiet();
    expect(messages).toHaveLength(1);
    expect(await outbox()).toHaveLength(1);
    expect(service.intake.metrics.channelStats().fs).toMatchObject({ received: 2, deduped: 1, rejected: 1 });
  });

  it('refuses forged, re-serialised, unsigned and undecryptable deliveries, recording nothing', async () => {
    await start();
    const good = push(textEvent('text-p2p.json', 'ev-bad', 'om_bad', 'hi'));
    const refusals: Array<[{ body: string; headers: Record<string, string> }, number]> = [
      [{ body: JSON.stringify(JSON.parse(good.body), null, 2), headers: good.headers }, 401],
      [{ body: good.body, headers: { ...good.headers, 'x-lark-signature': '0'.repeat(64) } }, 401],
      [{ body: good.body, headers: {} }, 401],
      [{ body: JSON.stringify(textEvent('text-p2p.json', 'ev-bad', 'om_bad', 'hi')), headers: {} }, 401],
      [
        push({
          ...textEvent('text-p2p.json', 'ev-bad', 'om_bad', 'hi'),
          header: { event_id: 'ev-bad', event_type: 'im.message.receive_v1', token: 'wrong' },
        }),
        401,
      ],
      // Signed in 2001.
      [sealed(textEvent('text-p2p.json', 'ev-bad', 'om_bad', 'hi'), '978307200'), 401],
      [{ body: '{"encrypt": "AAAA"}', headers: {} }, 401],
      [{ body: '{"encrypt": ', headers: {} }, 400],
    ];
    for (const [delivery, status] of refusals)
      expect((await post(delivery)).status, delivery.body.slice(0, 60)).toBe(status);
    await quiet();
    expect(await outbox()).toEqual([]);
    expect(service.intake.metrics.channelStats().fs).toEqual({ rejected: refusals.length });
    expect((await fetch(`${service.url}/v1/trace/ev-bad`)).status).toBe(404);
  });
});
