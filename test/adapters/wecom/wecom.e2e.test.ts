import { encrypt, getSignature } from '@wecom/crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProcessedMessage } from '../../../src/events/output.js';
import { startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';

const TOKEN = 'wecom-e2e-token';
const KEY = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';
const CORP_ID = 'ww1234567890abcdef';
const AGENT_ID = '1000002';

/** A WeCom app message from ZhangSan to our app. */
const message = (createTime: number, fields: string) =>
  `<xml><ToUserName><![CDATA[${CORP_ID}]]></ToUserName><FromUserName><![CDATA[ZhangSan]]></FromUserName><CreateTime>${createTime}</CreateTime>${fields}<AgentID>${AGENT_ID}</AgentID></xml>`;

describe('a WeCom channel on the real server', () => {
  let service: Running;
  let clock: ManualClock;
  let api: TestServer;
  const asked: string[] = [];
  beforeAll(async () => {
    api = await serve((req, res) => {
      const url = new URL(req.url!, 'http://x');
      asked.push(url.pathname);
      res.setHeader('content-type', 'application/json');
      if (
        url.pathname === '/cgi-bin/gettoken' &&
        url.searchParams.get('corpid') === CORP_ID &&
        url.searchParams.get('corpsecret') === 'app-secret'
      ) {
        res.end('{"errcode":0,"errmsg":"ok","access_token":"CORP_ACCESS","expires_in":7200}');
        return;
      }
      if (
        url.pathname === '/cgi-bin/media/get' &&
        url.searchParams.get('access_token') === 'CORP_ACCESS' &&
        url.searchParams.get('media_id') === 'MEDIA_9'
      ) {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
        return;
      }
      res.end('{"errcode":40014,"errmsg":"invalid access_token"}');
    });
  });
  afterAll(() => api.close());
  afterEach(async () => service?.stop());

  const start = async () => {
    clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 400 },
        media: { allowHosts: [`127.0.0.1:${api.port}`], retries: 0 },
        channels: [
          {
            id: 'wecom',
            adapter: 'wecom',
            token: TOKEN,
            corpId: CORP_ID,
            encodingAESKey: KEY,
            agentId: AGENT_ID,
            secret: 'app-secret',
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
  /** POST a callback as WeCom does: encrypted for our CorpID, msg_signature in the query. */
  const post = async (xml: string, nonce = '1320562132') => {
    const timestamp = String(Math.floor(clock.now() / 1000));
    const ciphertext = encrypt(KEY, xml, CORP_ID);
    const query = new URLSearchParams({
      timestamp,
      nonce,
      msg_signature: getSignature(TOKEN, timestamp, nonce, ciphertext),
    });
    const response = await fetch(`${service.url}/webhooks/wecom?${query}`, {
      method: 'POST',
      headers: { 'content-type': 'text/xml' },
      body: `<xml><ToUserName><![CDATA[${CORP_ID}]]></ToUserName><AgentID><![CDATA[${AGENT_ID}]]></AgentID><Encrypt><![CDATA[${ciphertext}]]></Encrypt></xml>`,
    });
    return { status: response.status, text: await response.text() };
  };
  /** The URL check as WeCom sends it: echostr encrypted for our CorpID, signed with the timestamp. */
  const check = (echostr: string, timestamp = String(Math.floor(clock.now() / 1000)), nonce = '437374425') =>
    fetch(
      `${service.url}/webhooks/wecom?${new URLSearchParams({ msg_signature: getSignature(TOKEN, timestamp, nonce, echostr), timestamp, nonce, echostr })}`,
    );

  it('answers the URL check with the bare echostr as text/plain, nosniff; never a message sent as echostr, nor a stale check', async () => {
    await start();
    const echo = await check(encrypt(KEY, '5927782489442352469', CORP_ID));
    expect([
      echo.status,
      echo.headers.get('content-type'),
      echo.headers.get('x-content-type-options'),
      await echo.text(),
    ]).toEqual([200, 'text/plain; charset=utf-8', 'nosniff', '5927782489442352469']);
    // A captured callback's Encrypt, with its own signed query, sent back as the URL check.
    const captured = encrypt(
      KEY,
      message(
        Math.floor(clock.now() / 1000),
        '<MsgType><![CDATA[text]]></MsgType><Content><![CDATA[工资单密码 1234]]></Content><MsgId>1</MsgId>',
      ),
      CORP_ID,
    );
    const replayed = await check(captured);
    const body = await replayed.text();
    expect(replayed.status).toBe(400);
    expect(JSON.parse(body).error.code).toBe('bad_handshake');
    expect(body).not.toContain('工资单');
    await clock.advance(3 * 86_400_000);
    const stale = await check(captured, String(Math.floor(clock.now() / 1000) - 3 * 86_400));
    expect([stale.status, ((await stale.json()) as any).error.code]).toEqual([401, 'stale_timestamp']);
  });

  it('merges fragments of one user into one output, emits a retried callback once, downloads the image into the sandbox, and traces the channel', async () => {
    const messages = await start();
    const now = Math.floor(clock.now() / 1000);
    const first = message(
      now,
      '<MsgType><![CDATA[text]]></MsgType><Content><![CDATA[报销单怎么提交]]></Content><MsgId>7381234567890123456</MsgId>',
    );
    expect(await post(first)).toEqual({ status: 200, text: '' });
    // WeCom's retry of the same callback (no answer within 5 s): answered again, emitted once.
    expect(await post(first, '99')).toEqual({ status: 200, text: '' });
    expect(
      await post(
        message(
          now,
          '<MsgType><![CDATA[text]]></MsgType><Content><![CDATA[要附发票吗]]></Content><MsgId>7381234567890123457</MsgId>',
        ),
      ),
    ).toEqual({ status: 200, text: '' });
    expect(
      await post(
        message(
          now,
          '<MsgType><![CDATA[image]]></MsgType><MediaId><![CDATA[MEDIA_9]]></MediaId><MsgId>7381234567890123458</MsgId>',
        ),
      ),
    ).toEqual({ status: 200, text: '' });
    await clock.advance(200);
    await until(async () => messages.length === 1 && (await service.intake.store.outboxAfter(0, 10)).length === 1);

    expect(messages[0]).toMatchObject({
      sessionKey: 'wecom:ZhangSan',
      content: '报销单怎么提交要附发票吗',
      merged: 3,
      sourceChannel: 'wecom',
      channel: 'wecom',
      messageIds: ['7381234567890123456', '7381234567890123457', '7381234567890123458'],
      media: [{ type: 'image', mime: 'image/png', bytes: PNG.length }],
    });
    // The file is in the media sandbox, fetched with the app's access token.
    const path = messages[0]!.media[0]!.path;
    expect(path.startsWith('/') || path.startsWith('..')).toBe(false);
    expect(readFileSync(join(service.dir, path)).equals(PNG)).toBe(true);
    expect(asked).toEqual(expect.arrayContaining(['/cgi-bin/gettoken', '/cgi-bin/media/get']));
    expect(service.intake.metrics.channelStats().wecom).toMatchObject({ received: 4, deduped: 1 });

    const trace = (await (await fetch(`${service.url}/v1/trace/7381234567890123456`)).json()) as any;
    const arrivals = trace.arrivals.filter((a: any) => a.id === '7381234567890123456');
    expect(arrivals.map((a: any) => [a.channel, a.verdict])).toEqual([
      ['wecom', 'accepted'],
      ['wecom', 'duplicate'],
    ]);
    expect(trace.outputs).toHaveLength(1);
  });
});
