import { createPrivateKey, sign } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProcessedMessage } from '../../../src/events/output.js';
import { fixture, fixtureBytes } from '../../fixtures/index.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';

// The op 13 vector's secret: the validation answer must come out as the QQ bot docs print it.
const SECRET = 'DG5g3B4j9X2KOErG';
const APP_ID = '102000001';
const ACK = { op: 12, d: 0 };

/** Sign a request as QQ does: Ed25519 over timestamp + body, by the key seeded from the secret. */
function qqSign(timestamp: string, body: string, secret = SECRET): string {
  let seed = secret;
  while (seed.length < 32) seed = seed + seed;
  const key = createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(seed.slice(0, 32))]),
    format: 'der',
    type: 'pkcs8',
  });
  return sign(null, Buffer.from(timestamp + body), key).toString('hex');
}

describe('a QQ bot channel on the real server', () => {
  let service: Running;
  let clock: ManualClock;
  let files: TestServer;
  beforeAll(async () => {
    files = await serve((req, res) => {
      if (req.url === '/download/a.png') {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
  });
  afterAll(() => files.close());
  afterEach(async () => service?.stop());

  const start = async (more: Array<Record<string, unknown>> = []) => {
    clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 400 },
        media: { allowHosts: [`127.0.0.1:${files.port}`], retries: 0 },
        channels: [{ id: 'qq', adapter: 'qqbot', appId: APP_ID, secret: SECRET }, ...more],
      },
      { clock },
    );
    const messages: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (m) => {
      messages.push(m);
    });
    return messages;
  };
  /** Now on the service's clock, as QQ stamps a push: whole seconds. */
  const stamp = () => String(Math.floor(clock.now() / 1000));
  const post = (body: string, signature?: string, timestamp = stamp(), channel = 'qq') =>
    postJson(`${service.url}/webhooks/${channel}`, body, {
      'user-agent': 'QQBot-Callback',
      'x-bot-appid': APP_ID,
      'x-signature-method': 'Ed25519',
      'x-signature-timestamp': timestamp,
      'x-signature-ed25519': signature ?? qqSign(timestamp, body),
    });
  const stats = () => service.intake.metrics.channelStats().qq ?? {};
  const outbox = () => service.intake.store.outboxAfter(0, 10);
  /** Let the debounce window (on its timer grid) run out. */
  const quiet = () => clock.advance(200);

  it('answers the callback URL validation with the signature of the docs vector, recording nothing', async () => {
    await start();
    const response = await post(fixtureBytes('qqbot', 'validation.json').toString());
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    // plain_token is the caller's: never sniffed as a page.
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.body).toEqual({
      plain_token: 'Arq0D5A61EgUu4OxUvOp',
      signature:
        '87befc99c42c651b3aac0278e71ada338433ae26fcb24307bdc5ad38c1adc2d01bcfcadc0842edac85e85205028a1132afe09280305f13aa6909ffc2d652c706',
    });
    const heartbeat = await post('{"op":1,"d":7}');
    expect(heartbeat.body).toEqual({ op: 11, d: 7 });
    expect(stats()).toEqual({});
    expect(await outbox()).toEqual([]);
  });

  it('emits a C2C message QQ pushed twice with the same d.id once, acknowledging both with op 12', async () => {
    const messages = await start();
    const body = fixtureBytes('qqbot', 'c2c.json').toString();
    expect(await post(body)).toMatchObject({ status: 200, body: ACK });
    // QQ's second push of the same message comes as a new event (another envelope id).
    const again = JSON.stringify({ ...JSON.parse(body), id: 'C2C_MESSAGE_CREATE:second-push', s: 9 });
    expect(await post(again)).toMatchObject({ status: 200, body: ACK });
    await quiet();
    await until(async () => (await outbox()).length === 1 && messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'qqbot:E4F4AEA33253A2797FB897C50B81D7ED',
      content: '帮我查一下订单 ORD-123',
      merged: 1,
      messageIds: ['ROBOT1.0_.b6nx.CVryAO0nR58RXuU6SC.m92gc19j02qKqdm8ek!'],
      sourceChannel: 'qqbot',
      channel: 'qq',
      conversation: { type: 'private', id: 'E4F4AEA33253A2797FB897C50B81D7ED' },
      replyBot: { channel: 'qq', botId: APP_ID },
      mentionedBots: [],
    });
    expect(stats()).toMatchObject({ received: 2, deduped: 1 });
  });

  it('puts a group @ message in the group session, naming our bot as mentioned and as the one to reply', async () => {
    const messages = await start();
    expect(await post(fixtureBytes('qqbot', 'group-at.json').toString())).toMatchObject({ status: 200, body: ACK });
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'qqbot:group:C9F778FE6ADF9D1D1DBE395BF744A33A',
      content: '今天谁值班',
      sender: { id: '0F6E3D7C4B5A69788796A5B4C3D2E1F0' },
      conversation: { type: 'group', id: 'C9F778FE6ADF9D1D1DBE395BF744A33A' },
      mentionedBots: [{ channel: 'qq', botId: APP_ID }],
      replyBot: { channel: 'qq', botId: APP_ID },
    });
  });

  it('acknowledges other events with op 12 and counts them ignored', async () => {
    await start();
    expect(await post(fixtureBytes('qqbot', 'group-add-robot.json').toString())).toMatchObject({
      status: 200,
      body: ACK,
    });
    expect(stats()).toMatchObject({ ignored: 1 });
    expect(stats().received).toBeUndefined();
  });

  it('refuses a wrong, malformed or missing signature with 401 and records nothing', async () => {
    await start();
    const body = fixtureBytes('qqbot', 'c2c.json').toString();
    for (const signature of [qqSign(stamp(), body, 'another-bot-secret'), 'abc', '']) {
      const response = await post(body, signature);
      expect(response.status).toBe(401);
      expect(response.body.error).toMatchObject({
        code: 'bad_signature',
        message: expect.stringMatching(/^Signature (mismatch|missing) on channel "qq": X-Signature-Ed25519/),
      });
    }
    const validation = fixtureBytes('qqbot', 'validation.json').toString();
    expect((await post(validation, qqSign(stamp(), validation, 'another-bot-secret'))).status).toBe(401);
    await quiet();
    expect(await outbox()).toEqual([]);
    expect(stats()).toEqual({ rejected: 4 });
  });

  it('refuses a signed push replayed after the exact-id window as stale_timestamp: one message, nothing recorded twice', async () => {
    const messages = await start();
    const body = fixtureBytes('qqbot', 'c2c.json').toString();
    const captured = stamp();
    const signature = qqSign(captured, body);
    expect(await post(body, signature, captured)).toMatchObject({ status: 200, body: ACK });
    await quiet();
    await until(() => messages.length === 1);
    // Within 2 min the same signed bytes verify, and d.id makes them a duplicate.
    await clock.advance(119_000);
    expect(await post(body, signature, captured)).toMatchObject({ status: 200, body: ACK });
    // After the 5 min window the id is forgotten: only the timestamp tells the replay.
    await clock.advance(5 * 60_000);
    const replay = await post(body, signature, captured);
    expect(replay.status).toBe(401);
    expect(replay.body.error).toEqual({
      code: 'stale_timestamp',
      message:
        'Stale timestamp on channel "qq": X-Signature-Timestamp is 419 s old, more than the 2 min allowed (a replayed request, or this host\'s clock is off)',
    });
    // Nor does a push stamped 2001 (or in the future) pass.
    for (const timestamp of ['978307200', String(Number(stamp()) + 121)])
      expect((await post(body, qqSign(timestamp, body), timestamp)).body.error.code).toBe('stale_timestamp');
    await quiet();
    expect(messages).toHaveLength(1);
    expect(await outbox()).toHaveLength(1);
    expect(stats()).toMatchObject({ received: 2, deduped: 1, rejected: 3 });
  });

  it('answers no unsigned validation on a "verify": false channel, so its answer cannot sign a webhook for a channel of the same secret', async () => {
    const messages = await start([{ id: 'open', adapter: 'qqbot', appId: APP_ID, secret: SECRET, verify: false }]);
    // The attack: a validation whose event_ts + plain_token are a webhook's timestamp + body.
    const timestamp = stamp();
    const c2c = fixture('qqbot', 'c2c.json');
    const forged = JSON.stringify({ ...c2c, d: { ...c2c.d, id: 'forged-1', content: 'forged: wire the money' } });
    const oracle = await postJson(
      `${service.url}/webhooks/open`,
      JSON.stringify({ op: 13, d: { plain_token: forged, event_ts: timestamp } }),
    );
    const webhook = await post(
      forged,
      typeof oracle.body.signature === 'string' ? oracle.body.signature : '',
      timestamp,
    );
    expect(webhook.status).toBe(401);
    expect(oracle.status).toBe(401);
    expect(oracle.body.error).toMatchObject({
      code: 'bad_signature',
      message: expect.stringMatching(
        /^Signature missing on channel "open": the callback URL validation \(op 13\) is answered with a signature by the Bot Secret, so it is verified even with "verify": false/,
      ),
    });
    // QQ's own, signed validation is still answered there.
    const validation = fixtureBytes('qqbot', 'validation.json').toString();
    expect(await post(validation, undefined, stamp(), 'open')).toMatchObject({
      status: 200,
      body: { plain_token: 'Arq0D5A61EgUu4OxUvOp', signature: expect.stringMatching(/^87befc99/) },
    });
    await quiet();
    expect(messages).toEqual([]);
    expect(await outbox()).toEqual([]);
  });

  it('downloads attachments, reaching a scheme-less url over https', async () => {
    const messages = await start();
    const body = fixture('qqbot', 'c2c-image.json');
    body.d.attachments = [
      {
        content_type: 'image/png',
        filename: 'a.png',
        size: PNG.length,
        url: `http://127.0.0.1:${files.port}/download/a.png`,
      },
      // No scheme, as QQ sends some: fetched as https://, which this plain-HTTP server cannot answer.
      { content_type: 'image/png', filename: 'b.png', url: `127.0.0.1:${files.port}/download/b.png` },
    ];
    expect(await post(JSON.stringify(body))).toMatchObject({ status: 200, body: ACK });
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]!.media).toMatchObject([{ type: 'image', mime: 'image/png', bytes: PNG.length }]);
    expect(messages[0]!.mediaErrors).toMatchObject([{ url: `https://127.0.0.1:${files.port}/download/b.png` }]);
    expect(files.hits.get('/download/a.png')).toBe(1);
  });
});
