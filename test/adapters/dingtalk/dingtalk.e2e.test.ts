import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProcessedMessage } from '../../../src/events/output.js';
import { fixture } from '../../fixtures/index.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';

const SECRET = 'dingtalk-app-secret-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH';
const ROBOT = 'dingxq2ftr6iwcu6zzur';
const HOUR = 3_600_000;
const ACK = {};

/** The headers DingTalk signs a callback with: `timestamp` (ms) and the sign of that timestamp. */
const signedHeaders = (timestamp: number, secret = SECRET) => ({
  timestamp: String(timestamp),
  sign: createHmac('sha256', secret).update(`${timestamp}\n${secret}`).digest('base64'),
});

describe('a DingTalk channel on the real server', () => {
  let service: Running;
  let clock: ManualClock;
  let api: TestServer;
  beforeAll(async () => {
    // DingTalk's API (the app token, messageFiles/download) and the file host, on loopback.
    api = await serve((req, res) => {
      if (req.url === '/files/dc-png') {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
        return;
      }
      let text = '';
      req.on('data', (chunk: Buffer) => {
        text += chunk;
      });
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (req.url === '/v1.0/oauth2/accessToken') {
          res.end(JSON.stringify({ accessToken: 'app-token', expireIn: 7200 }));
          return;
        }
        const body = JSON.parse(text) as { downloadCode: string };
        if (
          req.url === '/v1.0/robot/messageFiles/download' &&
          req.headers['x-acs-dingtalk-access-token'] === 'app-token'
        ) {
          res.end(JSON.stringify({ downloadUrl: `http://127.0.0.1:${api.port}/files/${body.downloadCode}` }));
          return;
        }
        res.statusCode = 401;
        res.end('{"code":"InvalidAuthentication","message":"不合法的access_token"}');
      });
    });
  });
  afterAll(() => api.close());
  afterEach(async () => service?.stop());

  const start = async (channel: Record<string, unknown> = {}) => {
    clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 400 },
        // the trail keeps what the hour the replay spans (trace.retentionMs is 1 h by default)
        trace: { retentionMs: 8 * 3_600_000 },
        media: { allowHosts: [`127.0.0.1:${api.port}`], retries: 0 },
        channels: [
          {
            id: 'dt',
            adapter: 'dingtalk',
            appSecret: SECRET,
            clientId: ROBOT,
            apiBaseUrl: `http://127.0.0.1:${api.port}`,
            ...channel,
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
  const post = (body: unknown, headers: Record<string, string> = signedHeaders(clock.now())) =>
    postJson(`${service.url}/webhooks/dt`, typeof body === 'string' ? body : JSON.stringify(body), headers);
  const stats = () => service.intake.metrics.channelStats().dt ?? {};
  const outbox = () => service.intake.store.outboxAfter(0, 10);
  /** Let the debounce window (on its timer grid) run out. */
  const quiet = () => clock.advance(200);
  const text = (msgId: string, content: string, extra: Record<string, unknown> = {}) => ({
    ...fixture('dingtalk', 'text-single.json'),
    msgId,
    createAt: clock.now(),
    text: { content },
    ...extra,
  });

  it('merges the fragments of one user into one output of the single-chat session, answering 200 {} each', async () => {
    const messages = await start();
    expect(await post(text('msg-a', '帮我查一下'))).toMatchObject({ status: 200, body: ACK });
    expect(await post(text('msg-b', '订单 ORD-123'))).toMatchObject({ status: 200, body: ACK });
    await quiet();
    await until(async () => (await outbox()).length === 1 && messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'dingtalk:cidpX8e6+vBsh0fGmNkCXYnqw==',
      content: '帮我查一下订单 ORD-123',
      merged: 2,
      messageIds: ['msg-a', 'msg-b'],
      sourceChannel: 'dingtalk',
      channel: 'dt',
      sender: { id: '0149264213373', name: '张三' },
      conversation: { type: 'private', id: 'cidpX8e6+vBsh0fGmNkCXYnqw==' },
      replyBot: { channel: 'dt', botId: ROBOT },
      mentionedBots: [],
    });
    // The trace of a message id shows its delivery and the output it went into.
    const trace = (await (await fetch(`${service.url}/v1/trace/${encodeURIComponent('msg-a')}`)).json()) as any;
    expect(trace.arrivals.map((a: any) => [a.id, a.channel, a.verdict])).toEqual([
      ['msg-a', 'dt', 'accepted'],
      ['msg-b', 'dt', 'accepted'],
    ]);
    expect(trace.outputs).toMatchObject([{ messageIds: ['msg-a', 'msg-b'] }]);
  });

  it('emits a message DingTalk delivered twice once, and a replay of the signed request later in the hour once too', async () => {
    // No dedup setting: the channel's exact-id window is the adapter's retry horizon, the signature's hour.
    const messages = await start();
    const body = JSON.stringify(text('msgD9ZnUfXRr+vp2ITGH1Dn2w==', '帮我查一下订单 ORD-123'));
    const captured = signedHeaders(clock.now());
    expect(await post(body, captured)).toMatchObject({ status: 200, body: ACK });
    await clock.advance(3_000);
    expect(await post(body, signedHeaders(clock.now()))).toMatchObject({ status: 200, body: ACK });
    await quiet();
    await until(() => messages.length === 1);
    // 40 min later the captured headers still verify (the sign does not cover the body): msgId dedup stops it.
    await clock.advance(40 * 60_000);
    expect(await post(body, captured)).toMatchObject({ status: 200, body: ACK });
    await quiet();
    expect(stats()).toMatchObject({ received: 3, deduped: 2 });
    // Past the hour, the captured headers are refused as stale.
    await clock.advance(20 * 60_000 + 1);
    const stale = await post(body, captured);
    expect(stale.status).toBe(401);
    expect(stale.body.error).toMatchObject({
      code: 'stale_timestamp',
      message: expect.stringMatching(
        /^Stale timestamp on channel "dt": the timestamp header is 3603 s old, more than the 1 h DingTalk allows/,
      ),
    });
    await quiet();
    expect(messages).toHaveLength(1);
    const trace = (await (
      await fetch(`${service.url}/v1/trace/${encodeURIComponent('msgD9ZnUfXRr+vp2ITGH1Dn2w==')}`)
    ).json()) as any;
    expect(trace.arrivals.map((a: any) => a.verdict)).toEqual(['accepted', 'duplicate', 'duplicate']);
  });

  it('puts a group @ message in the group session, naming our robot as mentioned and as the one to reply', async () => {
    const messages = await start();
    expect(await post({ ...fixture('dingtalk', 'text-group-at.json'), createAt: clock.now() })).toMatchObject({
      status: 200,
      body: ACK,
    });
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'dingtalk:group:cidKJ4A+Fz1bdUbqWuOXXQm0Q==',
      content: '今天谁值班 @王五',
      conversation: { type: 'group', id: 'cidKJ4A+Fz1bdUbqWuOXXQm0Q==' },
      mentionedBots: [{ channel: 'dt', botId: ROBOT }],
      replyBot: { channel: 'dt', botId: ROBOT },
    });
  });

  it('downloads a picture through messageFiles/download into the media folder', async () => {
    const messages = await start();
    const picture = {
      ...fixture('dingtalk', 'picture.json'),
      createAt: clock.now(),
      content: { downloadCode: 'dc-png' },
    };
    expect(await post(picture)).toMatchObject({ status: 200, body: ACK });
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]!.mediaErrors ?? []).toEqual([]);
    expect(messages[0]!.media).toMatchObject([{ type: 'image', mime: 'image/png', bytes: PNG.length }]);
    const stored = join(service.dir, messages[0]!.media[0]!.path);
    expect(existsSync(stored) && readFileSync(stored).equals(PNG)).toBe(true);
    expect(api.hits.get('/v1.0/oauth2/accessToken')).toBe(1);
    expect(api.hits.get('/files/dc-png')).toBe(1);
  });

  it('refuses a wrong or missing sign, a timestamp outside the hour and malformed JSON, recording nothing', async () => {
    await start();
    const body = JSON.stringify(text('msg-bad', 'hi'));
    const now = clock.now();
    const refusals: Array<[string, Record<string, string>, number, RegExp]> = [
      [
        body,
        signedHeaders(now, 'another-app-secret'),
        401,
        /^Signature mismatch on channel "dt": sign does not match the timestamp/,
      ],
      [body, {}, 401, /^Signature missing on channel "dt"/],
      [body, { timestamp: String(now) }, 401, /^Signature missing/],
      [body, signedHeaders(now - HOUR - 1), 401, /^Stale timestamp on channel "dt"/],
      [body, signedHeaders(now + HOUR + 1), 401, /^Stale timestamp on channel "dt"/],
      ['{"msgId": "msg-bad", ', signedHeaders(now), 400, /./],
      [
        JSON.stringify({ ...text('msg-bad', 'hi'), conversationType: '9' }),
        signedHeaders(now),
        400,
        /conversationType must be "1"/,
      ],
    ];
    for (const [payload, headers, status, message] of refusals) {
      const response = await post(payload, headers);
      expect(response.status, payload).toBe(status);
      expect(response.body.error.message).toMatch(message);
    }
    await quiet();
    expect(await outbox()).toEqual([]);
    expect(stats()).toEqual({ rejected: refusals.length });
    expect((await fetch(`${service.url}/v1/trace/msg-bad`)).status).toBe(404);
  });
});
