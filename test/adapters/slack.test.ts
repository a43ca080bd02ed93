import { createHmac } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureBytes } from '../fixtures/index.js';
import { postJson, readEvents, startService, until, type Running } from '../helpers.js';
import { ManualClock } from '../manual-clock.js';
import { PNG, serve, type TestServer } from '../servers.js';

const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const sign = (timestamp: number | string, body: string) => `v0=${createHmac('sha256', SECRET).update(`v0:${timestamp}:${body}`).digest('hex')}`;

describe('Slack Events channel', () => {
  let service: Running;
  let files: TestServer;
  beforeAll(async () => {
    files = await serve((req, res) => {
      if (req.headers.authorization === 'Bearer xoxb-test') res.end(PNG);
      else { res.statusCode = 403; res.end(); }
    });
  });
  afterAll(() => files.close());
  afterEach(async () => service?.stop());

  const start = (clock?: ManualClock) => startService({
    debounce: { windowMs: 100, maxWaitMs: 400 },
    media: { allowHosts: [`127.0.0.1:${files.port}`] },
    channels: [{ id: 'slack', adapter: 'slack', signingSecret: SECRET, botToken: 'xoxb-test' }],
  }, clock ? { clock } : {});
  const post = (name: string, options: { timestamp?: number | string; signature?: string; retry?: string; replace?: [string, string] } = {}) => {
    let body = fixtureBytes('slack', name).toString();
    if (options.replace) body = body.replace(options.replace[0], options.replace[1]);
    const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
    return postJson(`${service.url}/webhooks/slack`, body, {
      'x-slack-request-timestamp': String(timestamp), 'x-slack-signature': options.signature ?? sign(timestamp, body),
      ...(options.retry ? { 'x-slack-retry-num': options.retry, 'x-slack-retry-reason': 'http_timeout' } : {}),
    });
  };

  it('answers url_verification with the challenge', async () => {
    service = await start();
    const response = await post('url_verification.json');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    // The challenge is the caller's: JSON, never sniffed as a page.
    expect([response.headers.get('content-type'), response.headers.get('x-content-type-options')]).toEqual(['application/json; charset=utf-8', 'nosniff']);
  });

  it('refuses a timestamp more than 5 min off either way as stale_timestamp, and bad, short or missing signatures as bad_signature: 401, nothing recorded', async () => {
    const clock = new ManualClock();
    service = await start(clock);
    const now = Math.floor(clock.now() / 1000);
    for (const [timestamp, off] of [[now - 301, '301 s old'], [now + 301, '301 s ahead of this host\'s clock']] as const) {
      const response = await post('message.json', { timestamp });
      expect(response.status).toBe(401);
      expect(response.body.error).toEqual({ code: 'stale_timestamp', message: `Stale timestamp on channel "slack": X-Slack-Request-Timestamp is ${off}, more than the 5 min Slack allows (a replayed request, or this host's clock is off)` });
    }
    expect((await post('message.json', { timestamp: `${now}.5` })).body.error).toMatchObject({ code: 'bad_signature', message: expect.stringContaining('X-Slack-Request-Timestamp must be seconds since 1970, got') });
    expect(await service.intake.store.outboxAfter(0, 10)).toEqual([]);
    expect(service.intake.metrics.channelStats().slack).toEqual({ rejected: 3 });
    for (const signature of ['v0=' + '0'.repeat(64), 'v0=1']) {
      expect((await post('message.json', { timestamp: now, signature })).body.error).toMatchObject({ code: 'bad_signature', message: 'Signature mismatch on channel "slack": X-Slack-Signature does not match the body' });
    }
    const unsigned = await postJson(`${service.url}/webhooks/slack`, fixtureBytes('slack', 'message.json').toString());
    expect(unsigned.status).toBe(401);
  });

  it('yields one message for message + app_mention and for http_timeout retries', async () => {
    service = await start();
    const got: Array<{ content: string; key: string }> = [];
    service.intake.on('chat.processedMessage', (m) => { got.push({ content: m.content, key: m.sessionKey }); });
    expect((await post('message.json')).body.accepted).toBe(1);
    expect((await post('app_mention.json')).body.duplicates).toBe(1);
    expect((await post('message.json', { retry: '1' })).body.duplicates).toBe(1);
    await until(() => got.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(got).toEqual([{ content: '@UBOT deploy & check https://example.com', key: 'slack:group:C1' }]);
  });

  it('never turns bot messages, our own messages or edits into user messages', async () => {
    service = await start();
    for (const name of ['bot_message.json', 'own_bot.json', 'changed.json']) {
      const response = await post(name);
      expect([name, response.status, response.body.accepted]).toEqual([name, 200, 0]);
    }
    expect(service.intake.metrics.channelStats().slack).toMatchObject({ ignored: 3 });
  });

  it('keeps direct messages private and downloads shared files with the bot token', async () => {
    service = await start();
    const frames = readEvents(`${service.url}/v1/events`, 1, {
      onOpen: () => post('file.json', { replace: ['FILE_URL', `http://127.0.0.1:${files.port}/files-pri/T1-F1/shot.png`] }),
    });
    const [frame] = await frames;
    expect(frame?.data).toMatchObject({ sessionKey: 'slack:D1', conversation: { type: 'private' }, content: 'screenshot' });
    expect(frame?.data.media).toMatchObject([{ type: 'image', bytes: PNG.length }]);
  });
});
