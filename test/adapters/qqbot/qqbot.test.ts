import { createPrivateKey, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createAdapter, type Adapter } from '../../../src/adapters/index.js';
import type { RawDelivery } from '../../../src/adapters/kit/types.js';
import { loadConfig } from '../../../src/service/configure.js';
import { isConfigError, isSignatureError } from '../../../src/core/errors.js';
import { fixture, fixtureBytes } from '../../fixtures/index.js';

const NOW = 1_725_442_400_000;
const adapterFor = (settings: Record<string, unknown>): Adapter =>
  createAdapter(
    loadConfig({ env: {}, file: { channels: [{ id: 'qq', adapter: 'qqbot', appId: '102000001', ...settings }] } })
      .channels[0]!,
  );
const delivery = (body: Buffer | string, headers: Record<string, string> = {}, now = NOW): RawDelivery => ({
  headers,
  body: Buffer.from(body),
  query: new URLSearchParams(),
  now,
});

/** The signature QQ sends, computed here the way the Go SDK does (seed doubled until 32 bytes). */
function qqSign(secret: string, timestamp: string, body: Buffer | string): string {
  let seed = secret;
  while (seed.length < 32) seed = seed + seed;
  const key = createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(seed.slice(0, 32))]),
    format: 'der',
    type: 'pkcs8',
  });
  return sign(null, Buffer.concat([Buffer.from(timestamp), Buffer.from(body)]), key).toString('hex');
}
const signed = (secret: string, body: Buffer | string, timestamp = '1725442341') =>
  delivery(body, { 'x-signature-timestamp': timestamp, 'x-signature-ed25519': qqSign(secret, timestamp, body) });

/** The error `fn` throws. */
function thrown(fn: () => unknown): any {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
}

describe('QQ bot adapter: configuration', () => {
  it('refuses a namespace setting at start, naming it: openids must never meet OneBot QQ numbers', () => {
    const error = thrown(() => adapterFor({ secret: 's', namespace: 'qq' }));
    expect(isConfigError(error)).toBe(true);
    expect(error.message).toMatch(
      /^channels\[0\]\.namespace \(channel "qq"\): a qqbot channel's namespace is always "qqbot"/,
    );
    expect(adapterFor({ secret: 's' }).namespace).toBe('qqbot');
  });
});

describe('QQ bot adapter: signatures', () => {
  it('verifies the signature vector of the QQ bot docs', () => {
    const adapter = adapterFor({ secret: 'naOC0ocQE3shWLAfffVLB1rhYPG7' });
    // sign.md prints the body on one line, `{ "op": 0,"d": {}, "t": "GATEWAY_EVENT_NAME"}`, but
    // its signature is over the body as QQ sends it, indented by two spaces: the signed bytes
    // are the raw body, never a re-serialization of it.
    const body = '{\n  "op": 0,\n  "d": {},\n  "t": "GATEWAY_EVENT_NAME"\n}';
    const sig =
      '865ad13a61752ca65e26bde6676459cd36cf1be609375b37bd62af366e1dc25a8dc789ba7f14e017ada3d554c671a911bfdf075ba54835b23391d509579ed002';
    expect(() =>
      adapter.verify(delivery(body, { 'x-signature-timestamp': '1725442341', 'x-signature-ed25519': sig })),
    ).not.toThrow();
    expect(() =>
      adapter.verify(
        delivery(body, { 'x-signature-timestamp': '1725442341', 'x-signature-ed25519': sig.toUpperCase() }),
      ),
    ).not.toThrow();
    expect(qqSign('naOC0ocQE3shWLAfffVLB1rhYPG7', '1725442341', body)).toBe(sig);
    // The one-line rendering, one byte more in the body, or another timestamp: no longer verified.
    expect(
      thrown(() =>
        adapter.verify(
          delivery('{ "op": 0,"d": {}, "t": "GATEWAY_EVENT_NAME"}', {
            'x-signature-timestamp': '1725442341',
            'x-signature-ed25519': sig,
          }),
        ),
      ),
    ).toMatchObject({ status: 401 });
    expect(
      thrown(() =>
        adapter.verify(delivery(`${body} `, { 'x-signature-timestamp': '1725442341', 'x-signature-ed25519': sig })),
      ),
    ).toMatchObject({ status: 401, code: 'bad_signature' });
    expect(
      thrown(() =>
        adapter.verify(delivery(body, { 'x-signature-timestamp': '1725442342', 'x-signature-ed25519': sig })),
      ).message,
    ).toBe(
      'Signature mismatch on channel "qq": X-Signature-Ed25519 does not match X-Signature-Timestamp and the body (is channels[0].secret this bot\'s Bot Secret?)',
    );
  });

  it('verifies the signature vector of the Go SDK (a secret shorter than 32 bytes, a UTF-8 body)', () => {
    const body =
      '{"id":"ROBOT1.0_veoihSEXDc8Q.g-6eLpNIa11bH8MisOjn-m-LKxCPntMk6exUXgcWCGpVO7L2QKTNZzjZzFFDSbiOFcqAPWyVA!!","content":"哦一下","timestamp":"2024-10-15T16:33:15+08:00","author":{"id":"675860273","user_openid":"675860273"}}';
    const sig =
      'e949b5b94ef4103df903fb031d1d16e358db3db83e79e117edd404c8508be3ce8a76d7bad1bed353194c126a1a5915b4ad8b5288c1191cc53a12acffccd82004';
    expect(() =>
      adapterFor({ secret: '123456abcdef' }).verify(
        delivery(body, { 'x-signature-timestamp': '1728981195', 'x-signature-ed25519': sig }, 1_728_981_196_000),
      ),
    ).not.toThrow();
  });

  it('takes a signed timestamp up to 2 min from now either way, and refuses one further off (2001, or ahead) as stale_timestamp', () => {
    const secret = 'naOC0ocQE3shWLAfffVLB1rhYPG7';
    const adapter = adapterFor({ secret });
    const body = fixtureBytes('qqbot', 'c2c.json');
    const at = (seconds: number) => String(NOW / 1000 + seconds);
    for (const skew of [0, -120, 120]) expect(() => adapter.verify(signed(secret, body, at(skew)))).not.toThrow();
    const cases: Array<[string, string]> = [
      [at(-121), '121 s old'],
      [at(121), "121 s ahead of this host's clock"],
      ['978307200', '747135200 s old'],
    ];
    for (const [timestamp, off] of cases) {
      const error = thrown(() => adapter.verify(signed(secret, body, timestamp)));
      expect(isSignatureError(error)).toBe(true);
      expect(error).toMatchObject({ status: 401, code: 'stale_timestamp' });
      expect(error.message).toBe(
        `Stale timestamp on channel "qq": X-Signature-Timestamp is ${off}, more than the 2 min allowed (a replayed request, or this host's clock is off)`,
      );
    }
    // Not whole seconds: a malformed signature, not a stale one.
    expect(thrown(() => adapter.verify(signed(secret, body, `${at(0)}.5`)))).toMatchObject({
      status: 401,
      code: 'bad_signature',
      message: expect.stringContaining('X-Signature-Timestamp must be seconds since 1970'),
    });
  });

  it('refuses a missing, short, non-hex or non-canonical signature with a 401 that says which', () => {
    const adapter = adapterFor({ secret: 'naOC0ocQE3shWLAfffVLB1rhYPG7' });
    const body = fixtureBytes('qqbot', 'c2c.json');
    const good = signed('naOC0ocQE3shWLAfffVLB1rhYPG7', body);
    const sig = good.headers['x-signature-ed25519'] as string;
    expect(() => adapter.verify(good)).not.toThrow();
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{}, /^Signature missing on channel "qq": X-Signature-Ed25519 and X-Signature-Timestamp headers are required$/],
      [{ 'x-signature-ed25519': sig }, /Signature missing/],
      [
        { 'x-signature-timestamp': '1725442341', 'x-signature-ed25519': sig.slice(0, 126) },
        /is not a 64-byte Ed25519 signature in hex/,
      ],
      [
        { 'x-signature-timestamp': '1725442341', 'x-signature-ed25519': `${sig.slice(0, 126)}zz` },
        /is not a 64-byte Ed25519 signature in hex/,
      ],
      // The top three bits of the last byte set: never a signature QQ makes.
      [
        { 'x-signature-timestamp': '1725442341', 'x-signature-ed25519': `${sig.slice(0, 126)}e0` },
        /is not a 64-byte Ed25519 signature in hex/,
      ],
      [
        {
          'x-signature-timestamp': '1725442341',
          'x-signature-ed25519': qqSign('another-bot-secret', '1725442341', body),
        },
        /does not match/,
      ],
    ];
    for (const [headers, message] of cases) {
      const error = thrown(() => adapter.verify(delivery(body, headers)));
      expect(isSignatureError(error)).toBe(true);
      expect(error).toMatchObject({ status: 401, code: 'bad_signature' });
      expect(error.message).toMatch(message);
    }
  });

  it('answers the callback URL validation (op 13) with the signature of the QQ bot docs vector', () => {
    const secret = 'DG5g3B4j9X2KOErG';
    const adapter = adapterFor({ secret });
    const request = signed(secret, fixtureBytes('qqbot', 'validation.json'));
    expect(() => adapter.verify(request)).not.toThrow();
    expect(adapter.normalize(JSON.parse(request.body.toString()), request)).toEqual({
      events: [],
      reply: {
        status: 200,
        body: {
          plain_token: 'Arq0D5A61EgUu4OxUvOp',
          signature:
            '87befc99c42c651b3aac0278e71ada338433ae26fcb24307bdc5ad38c1adc2d01bcfcadc0842edac85e85205028a1132afe09280305f13aa6909ffc2d652c706',
        },
        headers: { 'x-content-type-options': 'nosniff' },
      },
    });
  });

  it('answers a signed validation with "verify": false too, refuses an unsigned one (401), and says why it cannot without a secret', () => {
    const secret = 'DG5g3B4j9X2KOErG';
    const body = fixture('qqbot', 'validation.json');
    const open = adapterFor({ secret, verify: false });
    expect(open.normalize(body, signed(secret, fixtureBytes('qqbot', 'validation.json'))).reply?.body).toMatchObject({
      signature: expect.stringMatching(/^87befc99/),
    });
    expect(thrown(() => open.normalize(body, delivery('')))).toMatchObject({
      status: 401,
      code: 'bad_signature',
      message:
        'Signature missing on channel "qq": the callback URL validation (op 13) is answered with a signature by the Bot Secret, so it is verified even with "verify": false; X-Signature-Ed25519 and X-Signature-Timestamp headers are required',
    });
    expect(
      thrown(() => open.normalize(body, signed('another-bot-secret', fixtureBytes('qqbot', 'validation.json')))),
    ).toMatchObject({ status: 401, message: expect.stringContaining('X-Signature-Ed25519 does not match') });
    expect(
      thrown(() => open.normalize(body, signed(secret, fixtureBytes('qqbot', 'validation.json'), '978307200'))),
    ).toMatchObject({ status: 401, code: 'stale_timestamp' });
    expect(thrown(() => adapterFor({ verify: false }).normalize(body, delivery('')))).toMatchObject({
      status: 400,
      code: 'no_secret',
      message:
        'Cannot answer the QQ callback URL validation on channel "qq": channels[0].secret (the Bot Secret) signs the answer and is not set',
    });
  });

  it('refuses to start without its appId', () => {
    expect(() => adapterFor({ appId: undefined, secret: 's' })).toThrow(
      /channels\[0\]\.appId \(channel "qq"\): is required \(the bot's AppID from q\.qq\.com\)/,
    );
    expect(() => adapterFor({ appId: '', secret: 's' })).toThrow(/channels\[0\]\.appId \(channel "qq"\): is required/);
  });
});

describe('regression: a "verify": false channel with the Bot Secret is no signing oracle', () => {
  it('refuses to sign an unsigned validation whose event_ts + plain_token spell a forged webhook, so no verifying channel of the secret takes one', () => {
    const secret = 'shared-bot-secret';
    const open = adapterFor({ secret, verify: false });
    const verifying = adapterFor({ secret });
    // QQ signs a webhook over X-Signature-Timestamp + body; the validation answer signs event_ts + plain_token.
    const timestamp = String(NOW / 1000);
    const forged = JSON.stringify({
      ...fixture('qqbot', 'c2c.json'),
      d: { ...fixture('qqbot', 'c2c.json').d, id: 'forged-1', content: 'forged: wire the money' },
    });
    const validation = { op: 13, d: { plain_token: forged, event_ts: timestamp } };
    let signature = '';
    let refused: unknown;
    try {
      signature = (
        open.normalize(validation, delivery(JSON.stringify(validation))).reply?.body as { signature: string }
      ).signature;
    } catch (error) {
      refused = error;
    }
    const webhook = delivery(forged, { 'x-signature-timestamp': timestamp, 'x-signature-ed25519': signature });
    expect(thrown(() => verifying.verify(webhook))).toMatchObject({ status: 401, code: 'bad_signature' });
    expect(refused).toMatchObject({
      status: 401,
      code: 'bad_signature',
      message: expect.stringContaining('verified even with "verify": false'),
    });
  });
});

describe('QQ bot adapter: payloads', () => {
  const adapter = adapterFor({ secret: 'fixture-secret', verify: false });
  const normalize = (body: unknown) => adapter.normalize(body, delivery(''));

  it('turns a C2C message into a private message of the user openid, text trimmed, acknowledged with op 12', () => {
    const {
      events: [event],
      reply,
      ignored,
    } = normalize(fixture('qqbot', 'c2c.json'));
    expect(reply).toEqual({ status: 200, body: { op: 12, d: 0 } });
    expect(ignored).toBeUndefined();
    expect(event).toMatchObject({
      id: 'ROBOT1.0_.b6nx.CVryAO0nR58RXuU6SC.m92gc19j02qKqdm8ek!',
      platformId: 'ROBOT1.0_.b6nx.CVryAO0nR58RXuU6SC.m92gc19j02qKqdm8ek!',
      kind: 'message',
      detail: 'private',
      adapter: 'qqbot',
      namespace: 'qqbot',
      botId: '102000001',
      sessionKey: 'qqbot:E4F4AEA33253A2797FB897C50B81D7ED',
      conversation: { type: 'private', id: 'E4F4AEA33253A2797FB897C50B81D7ED' },
      sender: { id: 'E4F4AEA33253A2797FB897C50B81D7ED' },
      text: '帮我查一下订单 ORD-123',
      mentions: [],
      media: [],
      timestamp: Date.parse('2023-11-06T13:37:18+08:00') / 1000,
    });
    expect(event!.fields).toMatchObject({
      event_type: 'C2C_MESSAGE_CREATE',
      user_openid: 'E4F4AEA33253A2797FB897C50B81D7ED',
    });
  });

  it('turns a group @ message into a group session that mentions our bot', () => {
    const [event] = normalize(fixture('qqbot', 'group-at.json')).events;
    expect(event).toMatchObject({
      detail: 'group',
      sessionKey: 'qqbot:group:C9F778FE6ADF9D1D1DBE395BF744A33A',
      conversation: { type: 'group', id: 'C9F778FE6ADF9D1D1DBE395BF744A33A' },
      sender: { id: '0F6E3D7C4B5A69788796A5B4C3D2E1F0' },
      text: '今天谁值班',
      mentions: ['102000001'],
    });
  });

  it('strips the bot mention from a guild @ message, names other mentions and prefixes https:// to a scheme-less attachment url', () => {
    const [event] = normalize(fixture('qqbot', 'guild-at.json')).events;
    expect(event).toMatchObject({
      detail: 'group',
      sessionKey: 'qqbot:channel:100010',
      conversation: { type: 'group', id: '100010' },
      sender: { id: '144115218678093383', name: 'alice' },
      text: '这张图和 @bob 说的一样吗',
      mentions: ['102000001', '144115218690154811'],
      media: [
        {
          url: 'https://gchat.qpic.cn/qmeetpic/49320852176993161/7163432-2881745298-7AB3E1C2D4F5A6B7C8D9E0F1A2B3C4D5/0',
          type: 'image',
          mimeType: 'image/png',
          size: 48213,
          fileName: '7AB3E1C2D4F5A6B7C8D9E0F1A2B3C4D5.png',
        },
      ],
    });
    expect(event!.fields).toMatchObject({ channel_id: '100010', guild_id: '18700000000001' });
  });

  it('keeps a guild DM in a session of its DM guild', () => {
    const [event] = normalize(fixture('qqbot', 'guild-dm.json')).events;
    expect(event).toMatchObject({
      detail: 'private',
      sessionKey: 'qqbot:dm:18700000000002',
      conversation: { type: 'private', id: '18700000000002' },
      sender: { id: '144115218678093383' },
      text: '私聊问一下',
      mentions: [],
    });
  });

  it('keeps urls that have a scheme and maps voice and file attachments to audio and documents', () => {
    const [event] = normalize(fixture('qqbot', 'c2c-image.json')).events;
    expect(event!.media).toEqual([
      {
        url: 'https://multimedia.nt.qq.com.cn/download?appid=1406&fileid=CgoxMjM0NTY3ODkwEhQ&rkey=CAQSKAB6JWENi5LM',
        type: 'image',
        mimeType: 'image/jpeg',
        size: 215644,
        fileName: 'B4E3C2A1D0F9E8D7C6B5A4F3E2D1C0B9.jpg',
      },
      {
        url: 'https://multimedia.nt.qq.com.cn/download?appid=1402&fileid=EhQ3YjA4MmY0&rkey=CAQSMAB6JWEN',
        type: 'audio',
        size: 6231,
        fileName: '3A2B1C0D.amr',
      },
    ]);
    const file = structuredClone(fixture('qqbot', 'c2c-image.json'));
    file.d.attachments = [{ content_type: 'file', filename: 'a.pdf', url: '//example.com/a.pdf' }];
    expect(normalize(file).events[0]!.media).toEqual([
      { url: 'https://example.com/a.pdf', type: 'document', fileName: 'a.pdf' },
    ]);
  });

  it('acknowledges other events with op 12 and counts them ignored, as it does guild messages of bots', () => {
    expect(normalize(fixture('qqbot', 'group-add-robot.json'))).toEqual({
      events: [],
      ignored: 1,
      reply: { status: 200, body: { op: 12, d: 0 } },
    });
    const fromBot = fixture('qqbot', 'guild-at.json');
    fromBot.d.author.bot = true;
    expect(normalize(fromBot)).toMatchObject({ events: [], ignored: 1 });
  });

  it('answers a heartbeat with op 11 and its seq, recording nothing', () => {
    expect(normalize(fixture('qqbot', 'heartbeat.json'))).toEqual({
      events: [],
      reply: { status: 200, body: { op: 11, d: 42 } },
    });
  });

  it('refuses an unknown op and a bad timestamp with a 400 naming the field', () => {
    expect(thrown(() => normalize({ op: 7, d: {} }))).toMatchObject({
      status: 400,
      code: 'bad_shape',
      message:
        'Body of channel "qq" is not a QQ bot webhook: op must be 0 (dispatch), 1 (heartbeat) or 13 (callback URL validation), got the number 7',
    });
    expect(thrown(() => normalize({ d: {} })).message).toContain(
      'op must be 0 (dispatch), 1 (heartbeat) or 13 (callback URL validation), got none',
    );
    const late = fixture('qqbot', 'c2c.json');
    late.d.timestamp = '1699249038';
    expect(thrown(() => normalize(late)).message).toContain(
      'd.timestamp must be an RFC 3339 time from 1970 to the year 3000 (like 2023-11-06T13:37:18+08:00), got a string',
    );
    const noAuthor = fixture('qqbot', 'group-at.json');
    delete noAuthor.d.author.member_openid;
    expect(thrown(() => normalize(noAuthor)).message).toContain(
      'd.author.member_openid is required (a non-empty string)',
    );
  });
});
