import { encrypt, getSignature } from '@wecom/crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProcessedMessage } from '../../../src/events/output.js';
import { startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';

const TOKEN = 'wx-e2e-token';
const APP_ID = 'wx2c2769f8efd9abc2';
const KEY = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';
const CORP_ID = 'ww1234567890abcdef';
const OPENID = 'oRd5a6kQd3Xh8Zy1Lm2NpQ7sT9uV';
/** The Content-Type WeChat and WeCom post their XML with. */
const XML_TYPE = 'text/xml';

const message = (fields: string) =>
  `<xml><ToUserName><![CDATA[gh_3f5e2a1b9c7d]]></ToUserName><FromUserName><![CDATA[${OPENID}]]></FromUserName>${fields}</xml>`;

describe('WeChat and WeCom channels on the real server', () => {
  let service: Running;
  let clock: ManualClock;
  let api: TestServer;
  beforeAll(async () => {
    api = await serve((req, res) => {
      const url = new URL(req.url!, 'http://x');
      if (url.pathname === '/cgi-bin/token') {
        res.setHeader('content-type', 'application/json');
        res.end('{"access_token":"ACCESS","expires_in":7200}');
        return;
      }
      if (url.pathname === '/cgi-bin/media/get' && url.searchParams.get('access_token') === 'ACCESS') {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
        return;
      }
      res.setHeader('content-type', 'text/plain');
      res.end('{"errcode":40001,"errmsg":"invalid credential"}');
    });
  });
  afterAll(() => api.close());
  afterEach(async () => service?.stop());

  const start = async (server: Record<string, unknown> = {}) => {
    clock = new ManualClock();
    service = await startService(
      {
        server,
        debounce: { windowMs: 100, maxWaitMs: 400 },
        media: { allowHosts: [`127.0.0.1:${api.port}`], retries: 0 },
        channels: [
          {
            id: 'wx',
            adapter: 'wechat',
            token: TOKEN,
            appId: APP_ID,
            encodingAESKey: KEY,
            appSecret: 'app-secret',
            apiBaseUrl: `http://127.0.0.1:${api.port}`,
          },
          { id: 'wc', adapter: 'wecom', token: TOKEN, corpId: CORP_ID, encodingAESKey: KEY, agentId: '1000002' },
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
  /** POST a message as WeChat does in safe mode (or WeCom, with `receiveId` the CorpID). */
  const post = async (
    channel: string,
    xml: string,
    options: { receiveId?: string; nonce?: string; token?: string } = {},
  ) => {
    const timestamp = String(Math.floor(clock.now() / 1000));
    const nonce = options.nonce ?? '1320562132';
    const ciphertext = encrypt(KEY, xml, options.receiveId ?? APP_ID);
    const query = new URLSearchParams({
      timestamp,
      nonce,
      msg_signature: getSignature(options.token ?? TOKEN, timestamp, nonce, ciphertext),
    });
    if (channel === 'wx') query.set('encrypt_type', 'aes');
    const response = await fetch(`${service.url}/webhooks/${channel}?${query}`, {
      method: 'POST',
      headers: { 'content-type': XML_TYPE },
      body: `<xml><ToUserName><![CDATA[gh_3f5e2a1b9c7d]]></ToUserName><Encrypt><![CDATA[${ciphertext}]]></Encrypt></xml>`,
    });
    return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
  };
  const outbox = () => service.intake.store.outboxAfter(0, 10);
  const quiet = () => clock.advance(200);

  it('answers the URL check with echostr, as text/plain, and not a captured one replayed past the tolerance', async () => {
    await start();
    const timestamp = String(Math.floor(clock.now() / 1000));
    const query = new URLSearchParams({
      signature: getSignature(TOKEN, timestamp, '7', ''),
      timestamp,
      nonce: '7',
      echostr: '7312683513437158720',
    });
    const response = await fetch(`${service.url}/webhooks/wx?${query}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    // echostr is the caller's (the signature does not cover it): never sniffed as a page.
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await response.text()).toBe('7312683513437158720');
    await clock.advance(301_000);
    const replayed = await fetch(`${service.url}/webhooks/wx?${query}`);
    expect(replayed.status).toBe(401);
    expect(((await replayed.json()) as any).error.code).toBe('stale_timestamp');
    query.set('signature', '0'.repeat(40));
    expect((await fetch(`${service.url}/webhooks/wx?${query}`)).status).toBe(401);
  });

  it('merges fragments of one user into one output, emits a retried message once, downloads the image by media_id, and traces it', async () => {
    const messages = await start();
    const now = Math.floor(clock.now() / 1000);
    const text = message(
      `<CreateTime>${now}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[帮我查一下订单]]></Content><MsgId>6054768590064713728</MsgId>`,
    );
    expect(await post('wx', text)).toEqual({ status: 200, type: 'text/plain; charset=utf-8', text: 'success' });
    // WeChat's retry of the same message after 5 s without an answer: answered success again, emitted once.
    expect(await post('wx', text, { nonce: '99' })).toMatchObject({ status: 200, text: 'success' });
    const image = message(
      `<CreateTime>${now}</CreateTime><MsgType><![CDATA[image]]></MsgType><MediaId><![CDATA[MEDIA_1]]></MediaId><MsgId>6054768590064713729</MsgId>`,
    );
    expect(await post('wx', image)).toMatchObject({ status: 200, text: 'success' });
    await quiet();
    await until(async () => messages.length === 1 && (await outbox()).length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: `wechat:${OPENID}`,
      content: '帮我查一下订单',
      merged: 2,
      sourceChannel: 'wechat',
      channel: 'wx',
      messageIds: ['6054768590064713728', '6054768590064713729'],
      media: [{ type: 'image', mime: 'image/png', bytes: PNG.length }],
    });
    expect(readFileSync(join(service.dir, messages[0]!.media[0]!.path)).equals(PNG)).toBe(true);
    expect(service.intake.metrics.channelStats().wx).toMatchObject({ received: 3, deduped: 1 });
    const trace = (await (await fetch(`${service.url}/v1/trace/6054768590064713728`)).json()) as any;
    expect(trace.arrivals.length).toBeGreaterThanOrEqual(1);
    expect(trace.outputs).toHaveLength(1);
  });

  it('refuses a wrong signature, another AppID, a DOCTYPE: 401/400, nothing recorded', async () => {
    await start();
    const now = Math.floor(clock.now() / 1000);
    const text = message(
      `<CreateTime>${now}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hi]]></Content><MsgId>1</MsgId>`,
    );
    expect(await post('wx', text, { token: 'other' })).toMatchObject({ status: 401 });
    expect(await post('wx', text, { receiveId: 'wx0000000000000000' })).toMatchObject({ status: 401 });
    expect(await post('wx', `<!DOCTYPE x [<!ENTITY a "b">]>${text}`)).toMatchObject({ status: 400 });
    expect(await post('wc', text, { receiveId: APP_ID })).toMatchObject({ status: 401 });
    await quiet();
    expect(await outbox()).toEqual([]);
    expect(service.intake.metrics.channelStats().wx).toEqual({ rejected: 3 });
  });

  it('answers 413 body_too_large to a callback over the body limit and records nothing', async () => {
    await start({ bodyLimitBytes: 4096 });
    const now = Math.floor(clock.now() / 1000);
    const text = message(
      `<CreateTime>${now}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[${'长'.repeat(3000)}]]></Content><MsgId>2</MsgId>`,
    );
    const response = await post('wx', text);
    expect(response.status).toBe(413);
    expect(JSON.parse(response.text)).toMatchObject({ error: { code: 'body_too_large' } });
    // A callback under the limit is still taken.
    expect(
      await post(
        'wx',
        message(
          `<CreateTime>${now}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[short]]></Content><MsgId>3</MsgId>`,
        ),
      ),
    ).toMatchObject({ status: 200 });
    await quiet();
    await until(async () => (await outbox()).length === 1);
    expect((await outbox()).map((output) => output.messageIds)).toEqual([['3']]);
    expect(service.intake.metrics.channelStats().wx?.received).toBe(1);
  });

  it('takes XML only as text/xml or application/xml: a JSON type is a 415 that names them', async () => {
    await start();
    const response = await fetch(`${service.url}/webhooks/wx`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '<xml/>',
    });
    expect(response.status).toBe(415);
    expect(((await response.json()) as any).error.message).toMatch(
      /Content-Type must be text\/xml or application\/xml/,
    );
  });

  it('takes a WeCom group message into the group session, answered 200 with an empty body', async () => {
    const messages = await start();
    const now = Math.floor(clock.now() / 1000);
    const xml = `<xml><ToUserName><![CDATA[${CORP_ID}]]></ToUserName><FromUserName><![CDATA[LiSi]]></FromUserName><CreateTime>${now}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[今天谁值班]]></Content><MsgId>7381234567890123457</MsgId><AgentID>1000002</AgentID><ChatId><![CDATA[wrkSFfCg]]></ChatId></xml>`;
    expect(await post('wc', xml, { receiveId: CORP_ID })).toEqual({ status: 200, type: expect.anything(), text: '' });
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'wecom:group:wrkSFfCg',
      content: '今天谁值班',
      sourceChannel: 'wecom',
    });
  });
});
