import { decrypt, encrypt } from '@wecom/crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter, type Adapter } from '../../../src/adapters/index.js';
import type { RawDelivery } from '../../../src/adapters/kit/types.js';
import { loadConfig } from '../../../src/service/configure.js';
import { fixtureBytes } from '../../fixtures/index.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';
import { badlyPadded, HOSTILE_XML, ingest, seal, thrown } from '../wx-kit.js';

const NOW = 1_718_000_010_000;
const TS = '1718000009';
const TOKEN = 'wecom-token';
const CORP_ID = 'ww1234567890abcdef';
const KEY = 'kWxPEV2UEDyxWpmPdKC3F4dgPDmOvfKX1HGnEUDS1aR';

const adapterFor = (settings: Record<string, unknown> = {}): Adapter =>
  createAdapter(
    loadConfig({
      env: {},
      file: {
        channels: [
          {
            id: 'wc',
            adapter: 'wecom',
            token: TOKEN,
            corpId: CORP_ID,
            encodingAESKey: KEY,
            agentId: 1000002,
            ...settings,
          },
        ],
      },
    }).channels[0]!,
  );
const delivery = (body: Buffer | string, query: URLSearchParams, now = NOW): RawDelivery => ({
  headers: { 'content-type': 'text/xml' },
  body: Buffer.from(body),
  query,
  now,
});
const post = (message: string, options: { receiveId?: string; token?: string; encrypt?: string } = {}) => {
  const sealed = seal({
    token: options.token ?? TOKEN,
    key: KEY,
    receiveId: options.receiveId ?? CORP_ID,
    message,
    timestamp: TS,
    toUser: CORP_ID,
    agentId: '1000002',
    ...(options.encrypt ? { encrypt: options.encrypt } : {}),
  });
  return delivery(sealed.body, sealed.query);
};
const xml = (name: string) => fixtureBytes('wecom', name).toString();

describe('WeCom adapter: the URL check', () => {
  // The vector of WeCom's callback sample (as the SDKs' tests carry it): the echostr decrypts to 5927782489442352469.
  const vector = {
    msg_signature: 'dd6b9c95b495b3f7e2901bfbc76c664930ffdb96',
    timestamp: '1411443780',
    nonce: '437374425',
    echostr: '4ByGGj+sVCYcvGeQYhaKIk1o0pQRNbRjxybjTGblXrBaXlTXeOo1+bXFXDQQb1o6co6Yh9Bv41n7hOchLF6p+Q==',
  };
  const adapter = adapterFor({ token: '123456', corpId: 'wx49f0ab532d5d035a' });
  /** The URL check as WeCom sends it: at the vector's time. */
  const check = (query: URLSearchParams, on = adapter) => on.handshake!(delivery('', query, 1_411_443_781_000));

  it('answers the decrypted echostr bare, from the URL-decoded query', () => {
    expect(check(new URLSearchParams(vector))).toEqual({
      status: 200,
      body: '5927782489442352469',
      contentType: 'text/plain',
      headers: { 'x-content-type-options': 'nosniff' },
    });
    // A "+" sent unescaped reads back as a space.
    const raw = new URLSearchParams(
      `msg_signature=${vector.msg_signature}&timestamp=${vector.timestamp}&nonce=${vector.nonce}&echostr=${vector.echostr.replace(/=/g, '%3D')}`,
    );
    expect(check(raw).body).toBe('5927782489442352469');
    expect(decrypt(KEY, vector.echostr)).toMatchObject({ message: '5927782489442352469', id: 'wx49f0ab532d5d035a' });
  });

  it('refuses the vector with another nonce, token or CorpID, or long after its timestamp', () => {
    expect(thrown(() => check(new URLSearchParams({ ...vector, nonce: '437374424' })))).toMatchObject({
      status: 401,
      message: expect.stringContaining(
        'msg_signature (sha1 of token, timestamp, nonce and the ciphertext) does not match',
      ),
    });
    expect(
      thrown(() => check(new URLSearchParams(vector), adapterFor({ corpId: 'wx49f0ab532d5d035a' }))),
    ).toMatchObject({ status: 401 });
    expect(thrown(() => check(new URLSearchParams(vector), adapterFor({ token: '123456' })))).toMatchObject({
      status: 401,
      message: expect.stringContaining('addressed to another receive id, not ww1234567890abcdef'),
    });
    expect(thrown(() => adapter.handshake!(delivery('', new URLSearchParams(vector))))).toMatchObject({
      status: 401,
      code: 'stale_timestamp',
    });
    expect(thrown(() => adapter.handshake!(delivery('', new URLSearchParams())))).toMatchObject({
      status: 400,
      code: 'bad_handshake',
    });
  });
});

describe('regression: a message callback replayed as the URL check is never answered in clear text', () => {
  const adapter = adapterFor();
  /** A captured callback's query and Encrypt, sent back as a GET with echostr=<Encrypt>. */
  const replayed = (message: string, now: number) => {
    const sealed = seal({
      token: TOKEN,
      key: KEY,
      receiveId: CORP_ID,
      message,
      timestamp: TS,
      toUser: CORP_ID,
      agentId: '1000002',
    });
    sealed.query.set('echostr', sealed.encrypt);
    return delivery('', sealed.query, now);
  };

  it('refuses it while its timestamp is fresh: the echostr decrypts to XML, not a random string (400, nothing echoed)', () => {
    const error = thrown(() => adapter.handshake!(replayed(xml('text.xml'), NOW)));
    expect(error).toMatchObject({
      status: 400,
      code: 'bad_handshake',
      message:
        'GET on channel "wc": the echostr decrypts to XML, not the short random string of a WeCom URL check (a message\'s Encrypt sent as echostr?); it is not answered',
    });
    expect(error.message).not.toContain('报销单');
    expect(thrown(() => adapter.handshake!(replayed('x'.repeat(129), NOW)))).toMatchObject({
      status: 400,
      code: 'bad_handshake',
      message: expect.stringContaining('decrypts to 129 bytes'),
    });
    expect(adapter.handshake!(replayed('x'.repeat(128), NOW))).toMatchObject({ status: 200, body: 'x'.repeat(128) });
  });

  it('refuses it 3 days later as stale_timestamp (401)', () => {
    expect(thrown(() => adapter.handshake!(replayed(xml('text.xml'), NOW + 3 * 86_400_000)))).toMatchObject({
      status: 401,
      code: 'stale_timestamp',
      message: expect.stringMatching(/^Stale timestamp on channel "wc": the timestamp query parameter is 259201 s old/),
    });
  });
});

describe('WeCom adapter: callbacks', () => {
  const adapter = adapterFor();

  it('decrypts what the official library encrypts; app chats by user, group chats by ChatId; answers 200 empty', () => {
    const text = ingest(adapter, post(xml('text.xml')));
    expect(text.reply).toEqual({ status: 200, body: '' });
    expect(text.events).toMatchObject([
      {
        kind: 'message',
        detail: 'private',
        platformId: '7381234567890123456',
        sessionKey: 'wecom:ZhangSan',
        sender: { id: 'ZhangSan' },
        text: '报销单怎么提交',
        botId: '1000002',
        fields: { agent_id: '1000002', to_user: CORP_ID },
      },
    ]);
    expect(ingest(adapter, post(xml('group-text.xml'))).events).toMatchObject([
      {
        detail: 'group',
        sessionKey: 'wecom:group:wrkSFfCgAAtMQKg4xqDatM5C9IvFKbLw',
        conversation: { type: 'group', id: 'wrkSFfCgAAtMQKg4xqDatM5C9IvFKbLw' },
        sender: { id: 'LiSi' },
      },
    ]);
    expect(ingest(adapter, post(xml('image.xml'))).events[0]!.media).toEqual([
      {
        url: 'https://wework.qpic.cn/wwpic/demo/0',
        ref: '2-G6nrLmr5EC3MMb_-zK1dDdzmd0p7cNliYu9V5w7o8K0',
        type: 'image',
      },
    ]);
    expect(ingest(adapter, post(xml('click.xml'))).events).toMatchObject([
      { kind: 'notice', detail: 'click', platformId: 'ZhangSan:1718000004' },
    ]);
    expect(ingest(adapter, post(xml('enter-agent.xml')))).toMatchObject({
      events: [],
      ignored: 1,
      reply: { status: 200, body: '' },
    });
  });

  it('refuses a message of another app of the corp (AgentID), naming agentId', () => {
    expect(thrown(() => ingest(adapter, post(xml('text.xml').replace('1000002', '1000003'))))).toMatchObject({
      status: 400,
      message: expect.stringContaining("AgentID 1000003 is another app's; channels[0].agentId is 1000002"),
    });
  });

  it('refuses a wrong msg_signature, a stale timestamp, another CorpID, a truncated or badly padded ciphertext: 401', () => {
    const good = post(xml('text.xml'));
    const cases: RawDelivery[] = [
      post(xml('text.xml'), { token: 'other-token' }),
      { ...good, query: new URLSearchParams({ ...Object.fromEntries(good.query), timestamp: '1717990000' }) },
      post(xml('text.xml'), { receiveId: 'wwffffffffffffffff' }),
      post('', { encrypt: encrypt(KEY, xml('text.xml'), CORP_ID).slice(0, -8) }),
      post('', { encrypt: badlyPadded(KEY, xml('text.xml'), CORP_ID, 5) }),
      post('', { encrypt: badlyPadded(KEY, xml('text.xml'), CORP_ID, 0) }),
      post(xml('text.xml'), { receiveId: '' }),
    ];
    for (const [i, bad] of cases.entries())
      expect(
        thrown(() => ingest(adapter, bad)),
        `case ${i}`,
      ).toMatchObject({ status: 401, code: i === 1 ? 'stale_timestamp' : 'bad_signature' });
  });

  it('refuses a DOCTYPE or entities inside or outside the ciphertext, and an envelope without Encrypt: 400', () => {
    for (const hostile of HOSTILE_XML)
      expect(thrown(() => ingest(adapter, post(hostile)))).toMatchObject({
        status: 400,
        message: expect.stringContaining('DOCTYPE'),
      });
    const good = post(xml('text.xml'));
    expect(
      thrown(() => ingest(adapter, { ...good, body: Buffer.from(`<!DOCTYPE a><!-- -->${good.body.toString()}`) })),
    ).toMatchObject({ status: 400 });
    expect(
      thrown(() => ingest(adapter, { ...good, body: Buffer.from('<xml><ToUserName>x</ToUserName></xml>') })),
    ).toMatchObject({ status: 400, message: expect.stringContaining('needs <Encrypt>') });
  });

  it('refuses to start without an EncodingAESKey or CorpID, even with verify false', () => {
    expect(() => adapterFor({ encodingAESKey: undefined, verify: false })).toThrow(
      /channels\[0\]\.encodingAESKey \(channel "wc"\): is required/,
    );
    expect(() => adapterFor({ corpId: '' })).toThrow(/channels\[0\]\.corpId \(channel "wc"\): is required/);
  });
});

describe('WeCom adapter: media by media_id', () => {
  let api: TestServer;
  beforeAll(async () => {
    api = await serve((req, res) => {
      const url = new URL(req.url!, 'http://x');
      res.setHeader('content-type', 'application/json; charset=utf-8');
      if (url.pathname === '/cgi-bin/gettoken') {
        res.end(
          JSON.stringify(
            url.searchParams.get('corpid') === CORP_ID && url.searchParams.get('corpsecret') === 'app-secret'
              ? { errcode: 0, errmsg: 'ok', access_token: 'WT', expires_in: 7200 }
              : { errcode: 40001, errmsg: 'invalid secret' },
          ),
        );
      } else if (url.pathname === '/cgi-bin/media/get' && url.searchParams.get('access_token') === 'WT') {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
      } else res.end('{"errcode":42001,"errmsg":"access_token expired"}');
    });
  });
  afterAll(() => api.close());

  it('exchanges a media_id for media/get with the token of gettoken, and names what failed', async () => {
    const signal = new AbortController().signal;
    const adapter = adapterFor({ secret: 'app-secret', apiBaseUrl: `http://127.0.0.1:${api.port}` });
    expect(await adapter.resolveMedia!({ ref: 'm1' }, signal)).toEqual({
      url: `http://127.0.0.1:${api.port}/cgi-bin/media/get?access_token=WT&media_id=m1`,
    });
    await expect(
      adapterFor({ secret: 'wrong', apiBaseUrl: `http://127.0.0.1:${api.port}` }).resolveMedia!({ ref: 'm1' }, signal),
    ).rejects.toThrow('cgi-bin/gettoken answered errcode 40001 (invalid secret)');
    await expect(adapterFor().resolveMedia!({ ref: 'm1' }, signal)).rejects.toThrow(
      "channels[0].secret (the app's Secret) is needed to download WeCom media",
    );
  });
});
