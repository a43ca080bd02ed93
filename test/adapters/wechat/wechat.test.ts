import { encrypt, getSignature } from '@wecom/crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter, type Adapter } from '../../../src/adapters/index.js';
import type { RawDelivery } from '../../../src/adapters/kit/types.js';
import { WxCrypto, wxSignature } from '../../../src/adapters/wx/crypto.js';
import { loadConfig } from '../../../src/service/configure.js';
import { fixtureBytes } from '../../fixtures/index.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';
import { badlyPadded, HOSTILE_XML, ingest, seal, thrown } from '../wx-kit.js';

const NOW = 1_718_000_010_000;
const TS = '1718000009';
const TOKEN = 'wx-token';
const APP_ID = 'wx2c2769f8efd9abc2';
const KEY = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';

const adapterFor = (settings: Record<string, unknown> = {}): Adapter =>
  createAdapter(
    loadConfig({
      env: {},
      file: { channels: [{ id: 'wx', adapter: 'wechat', token: TOKEN, appId: APP_ID, ...settings }] },
    }).channels[0]!,
  );
const delivery = (body: Buffer | string, query: URLSearchParams, now = NOW): RawDelivery => ({
  headers: { 'content-type': 'text/xml' },
  body: Buffer.from(body),
  query,
  now,
});
/** A plain-mode POST as WeChat signs it: sha1 of the sorted token, timestamp and nonce. */
const plain = (body: Buffer | string, timestamp = TS, token = TOKEN) =>
  delivery(
    body,
    new URLSearchParams({
      signature: wxSignature(token, timestamp, '42'),
      timestamp,
      nonce: '42',
      openid: 'oRd5a6kQd3Xh8Zy1Lm2NpQ7sT9uV',
    }),
  );
const safe = (message: string, options: { receiveId?: string; token?: string; encrypt?: string } = {}) => {
  const sealed = seal({
    token: options.token ?? TOKEN,
    key: KEY,
    receiveId: options.receiveId ?? APP_ID,
    message,
    timestamp: TS,
    wechat: true,
    ...(options.encrypt ? { encrypt: options.encrypt } : {}),
  });
  return delivery(sealed.body, sealed.query);
};
const xml = (name: string) => fixtureBytes('wechat', name).toString();

describe('WeChat adapter: signatures and encryption', () => {
  it('answers the URL check of the docs vector with echostr as text/plain, until its timestamp is stale', () => {
    const adapter = adapterFor({ token: 'AAAAA' });
    const query = new URLSearchParams({
      signature: 'f464b24fc39322e44b38aa78f5edd27bd1441696',
      timestamp: '1714036504',
      nonce: '1514711492',
      echostr: '7312683513437158720',
    });
    const at = 1_714_036_505_000;
    expect(adapter.handshake!(delivery('', query, at))).toEqual({
      status: 200,
      body: '7312683513437158720',
      contentType: 'text/plain',
      headers: { 'x-content-type-options': 'nosniff' },
    });
    // The signature does not cover echostr: a captured check, replayed later with an echostr of
    // the caller's choosing, is refused by its timestamp.
    query.set('echostr', '<script>alert(1)</script>');
    expect(thrown(() => adapter.handshake!(delivery('', query, at + 301_000)))).toMatchObject({
      status: 401,
      code: 'stale_timestamp',
      message: expect.stringContaining('the timestamp query parameter is 302 s old'),
    });
    query.set('nonce', '1514711493');
    expect(thrown(() => adapter.handshake!(delivery('', query, at)))).toMatchObject({
      status: 401,
      message: expect.stringMatching(
        /^Signature mismatch on channel "wx": signature \(sha1 of token, timestamp and nonce\) does not match: is channels\[0\]\.token/,
      ),
    });
    expect(thrown(() => adapter.handshake!(delivery('', new URLSearchParams())))).toMatchObject({
      status: 400,
      code: 'bad_handshake',
    });
  });

  it('decrypts the official WXBizMsgCrypt sample (compatible mode: plaintext fields beside Encrypt; only the ciphertext counts)', () => {
    const adapter = adapterFor({ token: 'spamtest', encodingAESKey: KEY, timestampToleranceSec: 0 });
    const encrypted =
      'hyzAe4OzmOMbd6TvGdIOO6uBmdJoD0Fk53REIHvxYtJlE2B655HuD0m8KUePWB3+LrPXo87wzQ1QLvbeUgmBM4x6F8PGHQHFVAFmOD2LdJF9FrXpbUAh0B5GIItb52sn896wVsMSHGuPE328HnRGBcrS7C41IzDWyWNlZkyyXwon8T332jisa+h6tEDYsVticbSnyU8dKOIbgU6ux5VTjg3yt+WGzjlpKn6NPhRjpA912xMezR4kw6KWwMrCVKSVCZciVGCgavjIQ6X8tCOp3yZbGpy0VxpAe+77TszTfRd5RJSVO/HTnifJpXgCSUdUue1v6h0EIBYYI1BD1DlD+C0CR8e6OewpusjZ4uBl9FyJvnhvQl+q5rv1ixrcpCumEPo5MJSgM9ehVsNPfUM669WuMyVWQLCzpu9GhglF2PE=';
    const body = `<xml><ToUserName><![CDATA[gh_10f6c3c3ac5a]]></ToUserName><FromUserName><![CDATA[forged]]></FromUserName><CreateTime>1409735668</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[forged]]></Content><MsgId>1</MsgId><Encrypt><![CDATA[${encrypted}]]></Encrypt></xml>`;
    const query = new URLSearchParams({
      msg_signature: '5d197aaffba7e9b25a30732f161a50dee96bd5fa',
      timestamp: '1409735669',
      nonce: '1320562132',
      encrypt_type: 'aes',
    });
    const { events, reply } = ingest(adapter, delivery(body, query));
    expect(reply).toEqual({ status: 200, body: 'success', contentType: 'text/plain' });
    expect(events).toMatchObject([
      {
        kind: 'message',
        text: 'abcdteT',
        platformId: '6054768590064713728',
        sessionKey: 'wechat:oyORnuP8q7ou2gfYjqLzSIWZf0rs',
        timestamp: 1409735668,
        botId: APP_ID,
      },
    ]);
    expect(wxSignature('spamtest', '1409735669', '1320562132', encrypted)).toBe(
      '5d197aaffba7e9b25a30732f161a50dee96bd5fa',
    );
    query.set('msg_signature', '5d197aaffba7e9b25a30732f161a50dee96bd5fb');
    expect(thrown(() => ingest(adapter, delivery(body, query)))).toMatchObject({ status: 401, code: 'bad_signature' });
  });

  it('opens what the official library encrypts, every fixture, as the same events as plain mode', () => {
    const open = adapterFor({ encodingAESKey: KEY });
    const clear = adapterFor();
    for (const name of ['text.xml', 'image.xml', 'voice.xml', 'location.xml', 'subscribe.xml']) {
      const fromSafe = ingest(open, safe(xml(name)));
      const fromPlain = ingest(clear, plain(xml(name)));
      expect(
        fromSafe.events.map(({ id: _id, ...event }) => event),
        name,
      ).toEqual(fromPlain.events.map(({ id: _id, ...event }) => event));
      expect(fromSafe.events).toHaveLength(1);
    }
    // And the other way round: the official library reads our decryption's input as we do.
    const ciphertext = encrypt(KEY, 'hello 你好', APP_ID);
    expect(new WxCrypto(KEY, APP_ID).open(ciphertext).toString()).toBe('hello 你好');
    expect(wxSignature(TOKEN, TS, '1', ciphertext)).toBe(getSignature(TOKEN, TS, '1', ciphertext));
  });

  it('refuses a wrong signature, a stale timestamp, a plaintext callback of a safe-mode channel: 401', () => {
    const clear = adapterFor();
    expect(thrown(() => ingest(clear, plain(xml('text.xml'), TS, 'other-token')))).toMatchObject({
      status: 401,
      code: 'bad_signature',
    });
    expect(thrown(() => ingest(clear, plain(xml('text.xml'), '1717999000')))).toMatchObject({
      status: 401,
      code: 'stale_timestamp',
      message:
        'Stale timestamp on channel "wx": the timestamp query parameter is 1010 s old, more than the 300 s of channels[0].timestampToleranceSec (a replayed request, or this host\'s clock is off)',
    });
    expect(
      thrown(() => ingest(adapterFor({ encodingAESKey: KEY }), { ...safe(xml('text.xml')), now: NOW + 600_000 })),
    ).toMatchObject({ status: 401, code: 'stale_timestamp' });
    expect(thrown(() => ingest(clear, plain(xml('text.xml'), '1718000009.5')))).toMatchObject({
      status: 401,
      code: 'bad_signature',
      message: expect.stringContaining('the timestamp query parameter must be seconds since 1970'),
    });
    expect(thrown(() => ingest(clear, delivery(xml('text.xml'), new URLSearchParams())))).toMatchObject({
      status: 401,
      message: expect.stringContaining('the timestamp query parameter is required'),
    });
    expect(thrown(() => ingest(adapterFor({ encodingAESKey: KEY }), plain(xml('text.xml'))))).toMatchObject({
      status: 401,
      message: expect.stringContaining('channels[0].encodingAESKey is set, so WeChat must send safe-mode'),
    });
    expect(thrown(() => ingest(clear, safe(xml('text.xml'))))).toMatchObject({ status: 400, code: 'no_key' });
    // "verify": false: no signature asked for, and safe mode still decrypts.
    expect(
      ingest(adapterFor({ verify: false, encodingAESKey: KEY }), safe(xml('text.xml'), { token: 'anything' })).events,
    ).toHaveLength(1);
  });

  it('refuses a tampered, truncated or badly padded ciphertext, or one for another AppID: 401', () => {
    const adapter = adapterFor({ encodingAESKey: KEY });
    const good = encrypt(KEY, xml('text.xml'), APP_ID);
    const cases: Array<[string, RegExp]> = [
      [good.slice(0, -8), /not base64|not a whole number of 32-byte blocks/],
      [Buffer.from(good, 'base64').subarray(0, 64).toString('base64'), /padding is not PKCS#7|length field/],
      [
        `${good.slice(0, 10)}${good[10] === 'A' ? 'B' : 'A'}${good.slice(11)}`,
        /padding|length field|another receive id|does not parse|not/,
      ],
      [badlyPadded(KEY, xml('text.xml'), APP_ID, 5), /padding is not PKCS#7/],
      [badlyPadded(KEY, xml('text.xml'), APP_ID, 33), /padding is not PKCS#7/],
      [encrypt(KEY, xml('text.xml'), 'wx0000000000000000'), /addressed to another receive id, not wx2c2769f8efd9abc2/],
      [
        encrypt('0123456789abcdefghijklmnopqrstuvwxyzABCDEFG', xml('text.xml'), APP_ID),
        /padding|length field|another receive id/,
      ],
    ];
    for (const [ciphertext, why] of cases) {
      const error = thrown(() => ingest(adapter, safe('', { encrypt: ciphertext })));
      expect(error, ciphertext).toMatchObject({ status: expect.any(Number) });
      expect([400, 401], ciphertext).toContain(error.status);
      if (error.status === 401) expect(error.message, ciphertext).toMatch(why);
    }
    // The cases the issue names are 401 exactly.
    for (const ciphertext of [cases[0]![0], cases[3]![0], cases[4]![0], cases[5]![0]]) {
      expect(thrown(() => ingest(adapter, safe('', { encrypt: ciphertext }))).status).toBe(401);
    }
  });

  it('refuses XML with a DOCTYPE or entities (billion laughs, external entity), outside or inside the ciphertext, and XML over the limits: 400', () => {
    const clear = adapterFor();
    const open = adapterFor({ encodingAESKey: KEY });
    for (const hostile of HOSTILE_XML) {
      expect(thrown(() => ingest(clear, plain(hostile)))).toMatchObject({
        status: 400,
        message: expect.stringContaining('DOCTYPE and entity declarations are refused'),
      });
      expect(thrown(() => ingest(open, safe(hostile)))).toMatchObject({
        status: 400,
        message: expect.stringContaining('DOCTYPE'),
      });
    }
    const sealed = safe(xml('text.xml'));
    const envelope = Buffer.from(`<!DOCTYPE xml [<!ENTITY a "b">]>${sealed.body.toString()}`);
    expect(thrown(() => ingest(open, { ...sealed, body: envelope }))).toMatchObject({ status: 400 });
    const wide = `<xml>${'<A>1</A>'.repeat(50)}<MsgType>text</MsgType></xml>`;
    expect(thrown(() => ingest(clear, plain(wide), { maxDepth: 64, maxKeys: 40 }))).toMatchObject({
      status: 400,
      message: expect.stringContaining('more than 40 elements (server.maxKeys)'),
    });
    const deep = `<xml>${'<A>'.repeat(70)}${'</A>'.repeat(70)}</xml>`;
    expect(thrown(() => ingest(clear, plain(deep)))).toMatchObject({
      status: 400,
      message: expect.stringContaining('nested deeper than 64'),
    });
    for (const broken of [
      '<xml><A>1</B></xml>',
      'hello',
      '<xml><A>1</A>',
      '<a/><b/>',
      '<xml><__proto__>1</__proto__></xml>',
    ]) {
      expect(
        thrown(() => ingest(clear, plain(broken))),
        broken,
      ).toMatchObject({ status: 400, code: 'bad_shape' });
    }
  });

  it('refuses a bad EncodingAESKey at start, naming the setting', () => {
    expect(() => adapterFor({ encodingAESKey: 'short' })).toThrow(
      /channels\[0\]\.encodingAESKey \(channel "wx"\): must be the 43-character EncodingAESKey/,
    );
    expect(() => adapterFor({ appId: '' })).toThrow(/channels\[0\]\.appId \(channel "wx"\): is required/);
  });
});

describe('WeChat adapter: messages', () => {
  const adapter = adapterFor();
  const one = (name: string) => ingest(adapter, plain(xml(name))).events[0]!;

  it('reads text with the 64-bit MsgId exact, in the session of the openid', () => {
    expect(one('text.xml')).toMatchObject({
      id: '6054768590064713756',
      kind: 'message',
      detail: 'private',
      subType: 'text',
      platformId: '6054768590064713756',
      sessionKey: 'wechat:oRd5a6kQd3Xh8Zy1Lm2NpQ7sT9uV',
      sender: { id: 'oRd5a6kQd3Xh8Zy1Lm2NpQ7sT9uV' },
      text: '帮我查一下订单 ORD-123',
      timestamp: 1718000000,
      fields: { msg_id: '6054768590064713756', to_user: 'gh_3f5e2a1b9c7d' },
    });
  });

  it('reads image, voice, video, location and link', () => {
    expect(one('image.xml')).toMatchObject({
      text: '',
      media: [{ url: 'http://mmbiz.qpic.cn/mmbiz_jpg/demo/0', ref: expect.stringMatching(/^Xk3g/), type: 'image' }],
    });
    expect(one('voice.xml')).toMatchObject({
      text: '明天上午十点提醒我开会',
      media: [{ ref: 'Vm9pY2VNZWRpYUlkRGVtbzEyMzQ1Njc4OTA', type: 'audio', mimeType: 'audio/amr' }],
    });
    expect(one('video.xml')).toMatchObject({
      subType: 'shortvideo',
      media: [{ ref: 'VmlkZW9NZWRpYUlkRGVtbw', type: 'video' }],
      fields: { thumb_media_id: 'VGh1bWJNZWRpYUlkRGVtbw' },
    });
    expect(one('location.xml').text).toBe('location: 广州市天河区体育西路 (23.134521, 113.358803)');
    expect(one('link.xml').text).toBe(
      '公众号消息接口说明\nhttps://developers.weixin.qq.com/doc/offiaccount/Message_Management/Receiving_standard_messages.html',
    );
  });

  it('makes subscribe and CLICK notices keyed by FromUserName and CreateTime, and ignores other events', () => {
    expect(one('subscribe.xml')).toMatchObject({
      kind: 'notice',
      detail: 'subscribe',
      platformId: 'oRd5a6kQd3Xh8Zy1Lm2NpQ7sT9uV:1718000006',
      text: 'subscribe: qrscene_123123',
      fields: { event: 'subscribe', event_key: 'qrscene_123123', ticket: 'TICKET' },
    });
    expect(one('click.xml')).toMatchObject({ kind: 'notice', detail: 'click', text: 'click: MENU_ORDERS' });
    expect(ingest(adapter, plain(xml('location-event.xml')))).toMatchObject({
      events: [],
      ignored: 1,
      reply: { body: 'success' },
    });
  });

  it('makes unsubscribe and VIEW (a menu link opened) notices, the link as their text', () => {
    expect(one('unsubscribe.xml')).toMatchObject({
      kind: 'notice',
      detail: 'unsubscribe',
      platformId: 'oRd5a6kQd3Xh8Zy1Lm2NpQ7sT9uV:1718000008',
      text: 'unsubscribe',
      fields: { event: 'unsubscribe' },
    });
    expect(one('unsubscribe.xml').fields).not.toHaveProperty('event_key');
    expect(one('view.xml')).toMatchObject({
      kind: 'notice',
      detail: 'view',
      platformId: 'oRd5a6kQd3Xh8Zy1Lm2NpQ7sT9uV:1718000009',
      text: 'view: https://shop.example.com/orders',
      fields: { event: 'VIEW', event_key: 'https://shop.example.com/orders' },
    });
  });
});

describe('WeChat adapter: media by media_id', () => {
  let api: TestServer;
  let tokens = 0;
  let refuseNext = false;
  beforeAll(async () => {
    api = await serve((req, res) => {
      const url = new URL(req.url!, 'http://x');
      if (url.pathname === '/cgi-bin/token') {
        tokens++;
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify(
            url.searchParams.get('secret') === 'app-secret' &&
              url.searchParams.get('appid') === APP_ID &&
              url.searchParams.get('grant_type') === 'client_credential'
              ? { access_token: `T${tokens}`, expires_in: 7200 }
              : { errcode: 40125, errmsg: 'invalid appsecret' },
          ),
        );
        return;
      }
      if (url.pathname !== '/cgi-bin/media/get') {
        res.statusCode = 404;
        res.end();
        return;
      }
      const mediaId = url.searchParams.get('media_id');
      res.setHeader('content-type', 'text/plain');
      if (refuseNext) {
        refuseNext = false;
        res.end('{"errcode":40001,"errmsg":"invalid credential, access_token is invalid or not latest"}');
        return;
      }
      if (mediaId === 'video') {
        res.end(`{"video_url":"http://127.0.0.1:${api.port}/video.mp4"}`);
        return;
      }
      if (mediaId === 'gone') {
        res.end('{"errcode":40007,"errmsg":"invalid media_id"}');
        return;
      }
      res.setHeader('content-type', 'image/png');
      res.end(PNG);
    });
  });
  afterAll(() => api.close());
  const media = (settings: Record<string, unknown>) =>
    adapterFor({ appSecret: 'app-secret', apiBaseUrl: `http://127.0.0.1:${api.port}`, ...settings });

  it('exchanges a media_id for the media/get URL with an access token fetched once', async () => {
    const adapter = media({});
    const signal = new AbortController().signal;
    const first = await adapter.resolveMedia!({ ref: 'img-1', type: 'image' }, signal);
    expect(first.url).toBe(`http://127.0.0.1:${api.port}/cgi-bin/media/get?access_token=T${tokens}&media_id=img-1`);
    const before = tokens;
    await adapter.resolveMedia!({ ref: 'img-2', type: 'image' }, signal);
    expect(tokens).toBe(before);
    expect(await adapter.resolveMedia!({ ref: 'video', type: 'video' }, signal)).toEqual({
      url: `http://127.0.0.1:${api.port}/video.mp4`,
    });
    await expect(adapter.resolveMedia!({ ref: 'gone' }, signal)).rejects.toThrow(
      'media/get answered errcode 40007 (invalid media_id)',
    );
    // 40001: the token is dropped, a new one fetched and the request tried again.
    refuseNext = true;
    const again = await adapter.resolveMedia!({ ref: 'img-3' }, signal);
    expect(tokens).toBe(before + 1);
    expect(again.url).toContain(`access_token=T${tokens}&`);
  });

  it('says why media cannot be fetched without an AppSecret, or with a wrong one', async () => {
    const signal = new AbortController().signal;
    await expect(adapterFor().resolveMedia!({ ref: 'x' }, signal)).rejects.toThrow(
      'channels[0].appSecret (the AppSecret) is needed to download WeChat media',
    );
    await expect(media({ appSecret: 'wrong' }).resolveMedia!({ ref: 'x' }, signal)).rejects.toThrow(
      'cgi-bin/token answered errcode 40125 (invalid appsecret)',
    );
  });
});
