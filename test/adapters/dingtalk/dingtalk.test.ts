import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localContext } from '../../../src/adapters/kit/access-token.js';
import { createAdapter, type Adapter } from '../../../src/adapters/index.js';
import type { RawDelivery } from '../../../src/adapters/kit/types.js';
import { loadConfig } from '../../../src/service/configure.js';
import { isSignatureError } from '../../../src/core/errors.js';
import { fixture, fixtureBytes } from '../../fixtures/index.js';
import { serve, type TestServer } from '../../support/servers.js';

const NOW = 1_718_000_000_000;
const SECRET = 'dingtalk-app-secret-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH';
const ROBOT = 'dingxq2ftr6iwcu6zzur';
const channelOf = (settings: Record<string, unknown>) =>
  loadConfig({ env: {}, file: { channels: [{ id: 'dt', adapter: 'dingtalk', ...settings }] } }).channels[0]!;
const adapterFor = (settings: Record<string, unknown>, context = localContext(() => NOW)): Adapter =>
  createAdapter(channelOf(settings), undefined, context);
const delivery = (body: Buffer | string, headers: Record<string, string> = {}, now = NOW): RawDelivery => ({
  headers,
  body: Buffer.from(body),
  query: new URLSearchParams(),
  now,
});
/** DingTalk's sign, computed here as its docs' Python sample does. */
const signOf = (timestamp: string, secret = SECRET) =>
  createHmac('sha256', secret).update(`${timestamp}\n${secret}`, 'utf8').digest('base64');
const signed = (body: Buffer | string, timestamp = String(NOW), secret = SECRET, now = NOW) =>
  delivery(body, { timestamp, sign: signOf(timestamp, secret) }, now);

/** The error `fn` throws. */
function thrown(fn: () => unknown): any {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
}

describe('DingTalk adapter: signatures', () => {
  const adapter = adapterFor({ appSecret: SECRET });
  const body = fixtureBytes('dingtalk', 'text-single.json');

  it('verifies the sign of the timestamp: base64 HMAC-SHA256 keyed by the AppSecret over timestamp + "\\n" + AppSecret', () => {
    // Computed with Python's hmac module (the sample of DingTalk's docs), not with this code.
    expect(signOf(String(NOW))).toBe('6tjcjuiV+G86/OR5lY/yNxVCmsyv5OazBWKG2JlbAhw=');
    expect(signOf(String(NOW), 'this is secret')).toBe('btPelGua5Wb66WvkJkisamt8RxeNzQMXBG153NdaaSY=');
    expect(() =>
      adapter.verify(delivery(body, { timestamp: String(NOW), sign: '6tjcjuiV+G86/OR5lY/yNxVCmsyv5OazBWKG2JlbAhw=' })),
    ).not.toThrow();
    expect(() =>
      adapterFor({ appSecret: 'this is secret' }).verify(
        delivery(body, { timestamp: String(NOW), sign: 'btPelGua5Wb66WvkJkisamt8RxeNzQMXBG153NdaaSY=' }),
      ),
    ).not.toThrow();
  });

  it('does not cover the body: any body verifies with a signed timestamp (so msgId dedup stops replays)', () => {
    const { headers } = signed(body);
    expect(() => adapter.verify(delivery('{"msgId":"another"}', headers as Record<string, string>))).not.toThrow();
  });

  it('refuses a missing, malformed or wrong sign with a 401 that says which', () => {
    const ts = String(NOW);
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{}, /^Signature missing on channel "dt": the timestamp and sign headers are required/],
      [{ sign: signOf(ts) }, /Signature missing/],
      [{ timestamp: ts }, /Signature missing/],
      [
        { timestamp: `${ts}.5`, sign: signOf(`${ts}.5`) },
        /the timestamp header must be milliseconds since 1970, got "1718000000000.5"/,
      ],
      [
        { timestamp: ts, sign: signOf(ts, 'another-app-secret') },
        /^Signature mismatch on channel "dt": sign does not match the timestamp \(is channels\[0\]\.appSecret this app's AppSecret\?\)$/,
      ],
      [{ timestamp: ts, sign: signOf(String(NOW + 1)) }, /sign does not match/],
      [{ timestamp: ts, sign: `${signOf(ts)}=` }, /sign does not match/],
    ];
    for (const [headers, message] of cases) {
      const error = thrown(() => adapter.verify(delivery(body, headers)));
      expect(isSignatureError(error)).toBe(true);
      expect(error).toMatchObject({ status: 401, code: 'bad_signature' });
      expect(error.message).toMatch(message);
    }
  });

  it('takes a timestamp up to 1 h from now either way, and refuses one further off as stale, with its own code', () => {
    const hour = 3_600_000;
    for (const skew of [0, hour, -hour, 59 * 60_000])
      expect(() => adapter.verify(signed(body, String(NOW + skew)))).not.toThrow();
    const cases: Array<[number, string]> = [
      [-hour - 1000, '3601 s old'],
      [hour + 1000, "3601 s ahead of this host's clock"],
      [-24 * hour, '86400 s old'],
    ];
    for (const [skew, off] of cases) {
      const error = thrown(() => adapter.verify(signed(body, String(NOW + skew))));
      expect(isSignatureError(error)).toBe(true);
      expect(error).toMatchObject({ status: 401, code: 'stale_timestamp' });
      expect(error.message).toBe(
        `Stale timestamp on channel "dt": the timestamp header is ${off}, more than the 1 h DingTalk allows (a replayed request, or this host's clock is off)`,
      );
    }
  });

  it('checks nothing with "verify": false, and refuses to start without the appSecret otherwise', () => {
    expect(() => adapterFor({ verify: false }).verify(delivery(body))).not.toThrow();
    expect(() => adapterFor({})).toThrow(/channels\[0\]\.appSecret \(channel "dt"\): is required/);
  });

  it('refuses an apiBaseUrl that is not an http(s) URL at start, naming it', () => {
    expect(() => adapterFor({ appSecret: SECRET, apiBaseUrl: 'api.dingtalk.com' })).toThrow(
      /channels\[0\]\.apiBaseUrl \(channel "dt"\): must be an http:\/\/ or https:\/\/ URL/,
    );
    expect(() => adapterFor({ appSecret: SECRET, robotCode: 7 })).toThrow(
      /channels\[0\]\.robotCode \(channel "dt"\): must be a string/,
    );
  });
});

describe('DingTalk adapter: payloads', () => {
  const adapter = adapterFor({ appSecret: SECRET, verify: false });
  const normalize = (body: unknown, on = adapter) => on.normalize(body, delivery(''));

  it('turns a single-chat text into a message of dingtalk:<conversationId>, sender by staff id, answered 200 {}', () => {
    const {
      events: [event],
      reply,
      ignored,
    } = normalize(fixture('dingtalk', 'text-single.json'));
    expect(reply).toEqual({ status: 200, body: {} });
    expect(ignored).toBeUndefined();
    expect(event).toMatchObject({
      id: 'msgD9ZnUfXRr+vp2ITGH1Dn2w==',
      platformId: 'msgD9ZnUfXRr+vp2ITGH1Dn2w==',
      kind: 'message',
      detail: 'private',
      adapter: 'dingtalk',
      namespace: 'dingtalk',
      botId: ROBOT,
      sessionKey: 'dingtalk:cidpX8e6+vBsh0fGmNkCXYnqw==',
      conversation: { type: 'private', id: 'cidpX8e6+vBsh0fGmNkCXYnqw==' },
      sender: { id: '0149264213373', name: '张三' },
      text: '帮我查一下订单 ORD-123',
      media: [],
      mentions: [],
      timestamp: 1_718_000_000,
    });
    expect(event!.fields).toEqual({
      msg_id: 'msgD9ZnUfXRr+vp2ITGH1Dn2w==',
      msgtype: 'text',
      conversation_id: 'cidpX8e6+vBsh0fGmNkCXYnqw==',
      robot_code: ROBOT,
      sender_id: '$:LWCP_v1:$Zw5jPuLiS2Tfrsq5/d7vYw==',
      sender_staff_id: '0149264213373',
      sender_corp_id: 'ding9f50b15bccd16741',
      chatbot_user_id: '$:LWCP_v1:$Cxz2MWebbtC0AHCtyjWWiQ==',
      session_webhook: 'https://oapi.dingtalk.com/robot/sendBySession?session=c5b4d5dbd7c6e0f0b8fa1a3b0c2a9e11',
      session_webhook_expired_time: '1718005400000',
    });
  });

  it("puts a group @ message in dingtalk:group:<conversationId>, our robot first among the mentions, the robot's own atUsers entry left out", () => {
    const {
      events: [event],
    } = normalize(fixture('dingtalk', 'text-group-at.json'));
    expect(event).toMatchObject({
      detail: 'group',
      sessionKey: 'dingtalk:group:cidKJ4A+Fz1bdUbqWuOXXQm0Q==',
      conversation: { type: 'group', id: 'cidKJ4A+Fz1bdUbqWuOXXQm0Q==' },
      sender: { id: '0360215148', name: '李四' },
      text: '今天谁值班 @王五',
      mentions: [ROBOT, '0251383547'],
      fields: expect.objectContaining({ conversation_title: '运维值班群' }),
    });
    // Not in the @ list: no mention of our robot.
    const quiet = { ...fixture('dingtalk', 'text-group-at.json'), isInAtList: false, atUsers: [] };
    expect(normalize(quiet).events[0]!.mentions).toEqual([]);
  });

  it('joins the text of a richText message and takes its pictures as media by downloadCode', () => {
    const {
      events: [event],
    } = normalize(fixture('dingtalk', 'richtext.json'));
    expect(event).toMatchObject({
      text: '这个报错怎么处理\n日志在上面',
      media: [{ ref: 'dc-rich-1', type: 'image' }],
      mentions: [ROBOT],
    });
  });

  it("takes picture, file, audio and video messages as media refs, a voice message's recognition as its text", () => {
    expect(normalize(fixture('dingtalk', 'picture.json')).events[0]).toMatchObject({
      text: '',
      media: [{ ref: 'mIofN681YE3f/+m+NntqpT5r0qG5bMvNnH5tFpV8JgTcpicture', type: 'image' }],
    });
    expect(normalize(fixture('dingtalk', 'file.json')).events[0]).toMatchObject({
      text: '',
      media: [{ ref: 'dc-file-1', type: 'document', fileName: '季度报表.xlsx' }],
    });
    expect(normalize(fixture('dingtalk', 'audio.json')).events[0]).toMatchObject({
      text: '明天上午十点开会',
      media: [{ ref: 'dc-audio-1', type: 'audio' }],
    });
    expect(normalize(fixture('dingtalk', 'video.json')).events[0]).toMatchObject({
      detail: 'group',
      media: [{ ref: 'dc-video-1', type: 'video' }],
    });
    const unheard = fixture('dingtalk', 'audio.json');
    delete unheard.content.recognition;
    expect(normalize(unheard).events[0]!.text).toBe('');
  });

  it('names the sender by senderId without a staff id, and the robot by chatbotUserId when nothing else names it', () => {
    const body = fixture('dingtalk', 'text-group-at.json');
    delete body.senderStaffId;
    delete body.robotCode;
    const {
      events: [event],
    } = normalize(body);
    expect(event).toMatchObject({
      sender: { id: '$:LWCP_v1:$a4G2pK0mTt7WZ0mB1c8Ygw==' },
      botId: '$:LWCP_v1:$Cxz2MWebbtC0AHCtyjWWiQ==',
      mentions: ['$:LWCP_v1:$Cxz2MWebbtC0AHCtyjWWiQ==', '0251383547'],
    });
    // A configured robot is the bot id, and the one mentioned.
    expect(
      normalize(body, adapterFor({ appSecret: SECRET, robotCode: 'dingrobot', verify: false })).events[0],
    ).toMatchObject({ botId: 'dingrobot', mentions: ['dingrobot', '0251383547'] });
  });

  it('acknowledges message types it does not read with 200 {}, counted ignored', () => {
    expect(normalize({ ...fixture('dingtalk', 'text-single.json'), msgtype: 'interactiveCard' })).toEqual({
      events: [],
      ignored: 1,
      reply: { status: 200, body: {} },
    });
  });

  it('refuses what is not a robot message with a 400 naming the field', () => {
    const base = fixture('dingtalk', 'text-single.json');
    const cases: Array<[unknown, string]> = [
      [[], 'the body must be a robot message {msgId, msgtype, conversationId, ...}, got an empty array'],
      [{ ...base, msgtype: undefined }, 'msgtype is required (a non-empty string)'],
      [{ ...base, msgId: '' }, 'msgId is required (a non-empty string)'],
      [
        { ...base, conversationType: '3' },
        'conversationType must be "1" (single chat) or "2" (group chat), got a string',
      ],
      [
        { ...base, senderStaffId: undefined, senderId: undefined },
        'senderStaffId or senderId is required (a non-empty string)',
      ],
      [{ ...base, text: 'hi' }, 'text must be an object {content}, got a string'],
      [{ ...base, msgtype: 'richText', content: { richText: 'x' } }, 'content.richText must be an array, got a string'],
      [{ ...base, createAt: -1 }, 'createAt must be milliseconds since 1970 before the year 3000, got -1'],
    ];
    for (const [body, problem] of cases) {
      expect(thrown(() => normalize(body))).toMatchObject({
        status: 400,
        code: 'bad_shape',
        message: `Body of channel "dt" is not a DingTalk robot message: ${problem}`,
      });
    }
  });

  it("refuses a message for another robot than the channel's, saying which setting to fix", () => {
    const body = fixture('dingtalk', 'text-single.json');
    expect(
      thrown(() => normalize(body, adapterFor({ appSecret: SECRET, robotCode: 'dingother', verify: false }))),
    ).toMatchObject({
      status: 400,
      message: expect.stringContaining(
        `robotCode "${ROBOT}" is not this channel's robot, channels[0].robotCode "dingother"`,
      ),
    });
    expect(
      thrown(() => normalize(body, adapterFor({ appSecret: SECRET, clientId: 'dingother', verify: false }))).message,
    ).toContain('channels[0].clientId (robotCode unset) "dingother"');
    expect(normalize(body, adapterFor({ appSecret: SECRET, clientId: ROBOT, verify: false })).events[0]!.botId).toBe(
      ROBOT,
    );
  });
});

describe('DingTalk adapter: files', () => {
  let api: TestServer;
  const calls: Array<{ path: string; token: string | undefined; body: any }> = [];
  let tokens = 0;
  let refuseToken: string | undefined;
  const read = async (req: IncomingMessage) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    return JSON.parse(text);
  };
  beforeAll(async () => {
    api = await serve((req, res) => {
      void read(req).then((body) => {
        const token = req.headers['x-acs-dingtalk-access-token'] as string | undefined;
        calls.push({ path: req.url ?? '', token, body });
        res.setHeader('content-type', 'application/json');
        if (req.url === '/v1.0/oauth2/accessToken') {
          if (body.appSecret !== SECRET) {
            res.statusCode = 400;
            return res.end('{"code":"invalidClientIdOrSecret","message":"无效的clientId或者clientSecret"}');
          }
          return res.end(JSON.stringify({ accessToken: `token-${++tokens}`, expireIn: 7200 }));
        }
        if (token === refuseToken) {
          res.statusCode = 401;
          return res.end('{"code":"InvalidAuthentication","message":"不合法的access_token"}');
        }
        if (body.downloadCode === 'gone') {
          res.statusCode = 400;
          return res.end('{"code":"param.downloadCode.invalid","message":"downloadCode已过期"}');
        }
        res.end(JSON.stringify({ downloadUrl: `http://127.0.0.1:${api.port}/files/${body.downloadCode}` }));
      });
    });
  });
  afterAll(() => api.close());
  const settings = () => ({ appSecret: SECRET, clientId: ROBOT, apiBaseUrl: `http://127.0.0.1:${api.port}/` });
  const signal = () => new AbortController().signal;

  it('exchanges a downloadCode for its downloadUrl with one app access token for every instance', async () => {
    calls.length = 0;
    tokens = 0;
    const context = localContext(() => NOW);
    const first = adapterFor(settings(), context);
    const second = adapterFor(settings(), context);
    expect(await first.resolveMedia!({ ref: 'dc-1', type: 'image' }, signal())).toEqual({
      url: `http://127.0.0.1:${api.port}/files/dc-1`,
    });
    expect(await second.resolveMedia!({ ref: 'dc-2', type: 'image' }, signal())).toEqual({
      url: `http://127.0.0.1:${api.port}/files/dc-2`,
    });
    expect(calls).toEqual([
      { path: '/v1.0/oauth2/accessToken', token: undefined, body: { appKey: ROBOT, appSecret: SECRET } },
      { path: '/v1.0/robot/messageFiles/download', token: 'token-1', body: { downloadCode: 'dc-1', robotCode: ROBOT } },
      { path: '/v1.0/robot/messageFiles/download', token: 'token-1', body: { downloadCode: 'dc-2', robotCode: ROBOT } },
    ]);
  });

  it('fetches a new token once when DingTalk refuses the kept one', async () => {
    calls.length = 0;
    tokens = 0;
    const adapter = adapterFor({ ...settings(), robotCode: 'dingrobot' });
    await adapter.resolveMedia!({ ref: 'dc-1' }, signal());
    refuseToken = 'token-1';
    expect(await adapter.resolveMedia!({ ref: 'dc-3' }, signal())).toEqual({
      url: `http://127.0.0.1:${api.port}/files/dc-3`,
    });
    refuseToken = undefined;
    expect(calls.map((c) => [c.path, c.token, c.body.robotCode])).toEqual([
      ['/v1.0/oauth2/accessToken', undefined, undefined],
      ['/v1.0/robot/messageFiles/download', 'token-1', 'dingrobot'],
      ['/v1.0/robot/messageFiles/download', 'token-1', 'dingrobot'],
      ['/v1.0/oauth2/accessToken', undefined, undefined],
      ['/v1.0/robot/messageFiles/download', 'token-2', 'dingrobot'],
    ]);
  });

  it('says what DingTalk said when a download or the token fails, and what is missing without credentials', async () => {
    await expect(adapterFor(settings()).resolveMedia!({ ref: 'gone' }, signal())).rejects.toMatchObject({
      kind: 'http',
      message: 'DingTalk API answered 400: param.downloadCode.invalid: downloadCode已过期',
    });
    await expect(
      adapterFor({ ...settings(), appSecret: 'wrong-secret', verify: false }).resolveMedia!({ ref: 'dc-1' }, signal()),
    ).rejects.toMatchObject({
      message:
        'getting the app access token failed: DingTalk API answered 400: invalidClientIdOrSecret: 无效的clientId或者clientSecret',
    });
    await expect(adapterFor({ appSecret: SECRET }).resolveMedia!({ ref: 'dc-1' }, signal())).rejects.toMatchObject({
      kind: 'bad_url',
      message:
        'channels[0].clientId and channels[0].appSecret are needed to download DingTalk files (they get the app access token)',
    });
  });
});
