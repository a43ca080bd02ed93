import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { AESCipher } from '@larksuiteoapi/node-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localContext } from '../../../src/adapters/kit/access-token.js';
import { feishuDecrypt, feishuSignature, sealedCiphertext } from '../../../src/adapters/feishu/descriptor.js';
import { createAdapter, type Adapter } from '../../../src/adapters/index.js';
import type { RawDelivery } from '../../../src/adapters/kit/types.js';
import { loadConfig } from '../../../src/service/configure.js';
import { fixture, fixtureBytes } from '../../fixtures/index.js';
import { serve, type TestServer } from '../../support/servers.js';
import { ingest, thrown } from '../wx-kit.js';

const NOW = 1_718_000_000_000;
const TOKEN = 'fixture-secret';
const KEY = 'feishu-encrypt-key-0123456789';
const channelOf = (settings: Record<string, unknown>) =>
  loadConfig({ env: {}, file: { channels: [{ id: 'fs', adapter: 'feishu', appId: 'cli_a1b2c3', ...settings }] } })
    .channels[0]!;
const adapterFor = (settings: Record<string, unknown>): Adapter =>
  createAdapter(
    channelOf(settings),
    undefined,
    localContext(() => NOW),
  );
const delivery = (body: Buffer | string, headers: Record<string, string> = {}): RawDelivery => ({
  headers,
  body: Buffer.from(body),
  query: new URLSearchParams(),
  now: NOW,
});

/** `{"encrypt"}` as Feishu makes it: AES-256-CBC with key SHA-256(encryptKey), a random IV in front. */
function encrypted(plain: string, encryptKey = KEY, iv = randomBytes(16)): string {
  const cipher = createCipheriv('aes-256-cbc', createHash('sha256').update(encryptKey).digest(), iv);
  return JSON.stringify({
    encrypt: Buffer.concat([iv, cipher.update(plain, 'utf8'), cipher.final()]).toString('base64'),
  });
}

/**
 * A body encrypted with another key, under an IV for which decrypting it with KEY gives no valid
 * PKCS#7 padding: a random IV gives valid-looking padding about once in 256 tries (then the
 * plaintext is garbage and the answer a 400), and the case would fail that often.
 */
function badPadding(): string {
  const ours = createHash('sha256').update(KEY).digest();
  for (let i = 0; ; i++) {
    const iv = Buffer.alloc(16);
    iv.writeUInt32BE(i);
    const body = encrypted('{"schema":"2.0"}', 'another-key', iv);
    const bytes = Buffer.from((JSON.parse(body) as { encrypt: string }).encrypt, 'base64');
    const decipher = createDecipheriv('aes-256-cbc', ours, bytes.subarray(0, 16)).setAutoPadding(false);
    const plain = Buffer.concat([decipher.update(bytes.subarray(16)), decipher.final()]);
    const pad = plain[plain.length - 1]!;
    if (pad === 0 || pad > 16 || !plain.subarray(plain.length - pad).every((byte) => byte === pad)) return body;
  }
}

/** A delivery signed as Feishu signs it (X-Lark-Signature over timestamp, nonce, key and the raw body). */
function signed(body: string, encryptKey = KEY, timestamp = '1718000000', nonce = 'n0nce'): RawDelivery {
  return delivery(body, {
    'x-lark-request-timestamp': timestamp,
    'x-lark-request-nonce': nonce,
    'x-lark-signature': feishuSignature(timestamp, nonce, encryptKey, Buffer.from(body)),
  });
}

describe('Feishu adapter: crypto and signatures', () => {
  it('decrypts the published vector, as the official SDK does', () => {
    expect(feishuDecrypt('test key', 'P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=')).toBe('hello world');
    expect(new AESCipher('test key').decrypt('P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=')).toBe('hello world');
    // What the tests encrypt, the SDK reads back the same.
    const body = JSON.parse(encrypted('{"a":1}')) as { encrypt: string };
    expect(new AESCipher(KEY).decrypt(body.encrypt)).toBe('{"a":1}');
  });

  it('signs as hex sha256(timestamp + nonce + encryptKey + body)', () => {
    const expected = createHash('sha256').update(`1718000000n0nce${KEY}{"x":1}`).digest('hex');
    expect(feishuSignature('1718000000', 'n0nce', KEY, Buffer.from('{"x":1}'))).toBe(expected);
  });

  it('takes an encrypted, signed event whose timestamp is up to 1 h from now either way', () => {
    const adapter = adapterFor({ verificationToken: TOKEN, encryptKey: KEY });
    const body = encrypted(fixtureBytes('feishu', 'text-p2p.json').toString());
    for (const timestamp of ['1718000000', '1717996400', '1718003600']) {
      const result = ingest(adapter, signed(body, KEY, timestamp));
      expect(result.events).toHaveLength(1);
      expect(result.events[0]).toMatchObject({
        platformId: '5e3702a84e847582be8db7fb73283c02',
        sessionKey: 'feishu:oc_p2p1',
        text: '帮我查一下',
        botId: 'cli_a1b2c3',
      });
      expect(result.reply).toEqual({ status: 200, body: {} });
    }
  });

  it('refuses a signed timestamp more than 1 h off (2001, a replay, a clock ahead) as stale_timestamp, 401', () => {
    const adapter = adapterFor({ verificationToken: TOKEN, encryptKey: KEY });
    const body = encrypted(fixtureBytes('feishu', 'text-p2p.json').toString());
    const cases: Array<[string, string]> = [
      ['978307200', '739692800 s old'],
      ['1717996399', '3601 s old'],
      ['1718003601', "3601 s ahead of this host's clock"],
    ];
    for (const [timestamp, off] of cases) {
      expect(thrown(() => ingest(adapter, signed(body, KEY, timestamp)))).toMatchObject({
        status: 401,
        code: 'stale_timestamp',
        message: `Stale timestamp on channel "fs": X-Lark-Request-Timestamp is ${off}, more than the 1 h allowed (a replayed request, or this host's clock is off)`,
      });
    }
    // Not whole seconds (milliseconds, words): a malformed signature, not a stale one.
    for (const timestamp of ['1718000000000', 'soon']) {
      expect(thrown(() => ingest(adapter, signed(body, KEY, timestamp)))).toMatchObject({
        status: 401,
        code: 'bad_signature',
        message: expect.stringContaining(`X-Lark-Request-Timestamp must be seconds since 1970, got "${timestamp}"`),
      });
    }
  });

  it('refuses a re-serialised body, a wrong or missing signature, a bad ciphertext and an unencrypted event (401)', () => {
    const adapter = adapterFor({ verificationToken: TOKEN, encryptKey: KEY });
    const body = encrypted(fixtureBytes('feishu', 'text-p2p.json').toString());
    const good = signed(body);
    const reserialised = delivery(JSON.stringify(JSON.parse(body), null, 1), good.headers as Record<string, string>);
    const truncated = JSON.stringify({ encrypt: (JSON.parse(body) as { encrypt: string }).encrypt.slice(0, 40) });
    const cases: Array<[string, RawDelivery]> = [
      ['re-serialised', reserialised],
      ['another key', signed(body, 'another-key')],
      ['no nonce', delivery(body, { 'x-lark-request-timestamp': '1', 'x-lark-signature': 'ab' })],
      ['unsigned event', delivery(body)],
      ['truncated ciphertext', signed(truncated)],
      ['encrypted with another key', signed(badPadding())],
      ['plain event', signed(fixtureBytes('feishu', 'text-p2p.json').toString())],
    ];
    for (const [what, bad] of cases) {
      const error = thrown(() => ingest(adapter, bad));
      expect([what, error.status, error.code]).toEqual([what, 401, 'bad_signature']);
    }
  });

  it('takes X-Lark-Signature in upper-case hex, and refuses one that is not exactly its 64 hex digits (401)', () => {
    const adapter = adapterFor({ verificationToken: TOKEN, encryptKey: KEY });
    const body = encrypted(fixtureBytes('feishu', 'text-p2p.json').toString());
    const good = signed(body);
    const signature = good.headers['x-lark-signature'] as string;
    const withSignature = (value: string) =>
      delivery(body, { ...(good.headers as Record<string, string>), 'x-lark-signature': value });
    expect(ingest(adapter, withSignature(signature.toUpperCase())).events).toHaveLength(1);
    const cases: Array<[string, string]> = [
      ['one more hex digit', `${signature}0`],
      ['a trailing space', `${signature} `],
      ['the last digit not hex', `${signature.slice(0, 63)}g`],
      ['one digit short', signature.slice(0, 63)],
      ['two digits short', signature.slice(0, 62)],
      ['sha256= in front', `sha256=${signature}`],
    ];
    for (const [what, value] of cases) {
      const error = thrown(() => ingest(adapter, withSignature(value)));
      expect([what, error.status, error.code]).toEqual([what, 401, 'bad_signature']);
    }
  });

  it('reads the ciphertext of an {"encrypt"} envelope without JSON only where JSON.parse reads the same', () => {
    const taken = [
      '{"encrypt":"P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="}',
      '{"encrypt": "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="}',
      '{\n  "encrypt" :\t"AAAA"\r\n}\n',
      '{"encrypt":""}',
    ];
    for (const body of taken) {
      expect(sealedCiphertext(Buffer.from(body))).toBe((JSON.parse(body) as { encrypt: string }).encrypt);
    }
    const left = [
      '{"encrypt":"P37w\\/VZI="}',
      '{"encrypt":"AAAA","type":"x"}',
      '{"type":"x","encrypt":"AAAA"}',
      '{"encrypt":"AA\u00e9A"}',
      '{"encrypt":"AAAA"',
      '{"encrypt":"}',
      '{"encrypt":"AAAA"}x',
      '{"encrypt":"AAAA"}\u00a0',
      '{"Encrypt":"AAAA"}',
      ' {"encrypt":"AAAA"}',
      '{"encrypt":AAAA}',
    ];
    for (const body of left) expect([body, sealedCiphertext(Buffer.from(body))]).toEqual([body, undefined]);
  });

  it('checks header.token without an encrypt key, and refuses a wrong one (401)', () => {
    const adapter = adapterFor({ verificationToken: TOKEN });
    expect(ingest(adapter, delivery(fixtureBytes('feishu', 'text-p2p.json'))).events).toHaveLength(1);
    const forged = fixture('feishu', 'text-p2p.json') as { header: { token: string } };
    forged.header.token = 'not-it';
    expect(thrown(() => ingest(adapter, delivery(JSON.stringify(forged)))).status).toBe(401);
  });

  it('answers the URL verification, plain and encrypted (unsigned, as Feishu sends it), only with our token', () => {
    const challenge = (token: string) =>
      JSON.stringify({ challenge: 'ajls384kdjx98XX', token, type: 'url_verification' });
    expect(ingest(adapterFor({ verificationToken: TOKEN }), delivery(challenge(TOKEN))).reply).toEqual({
      status: 200,
      body: { challenge: 'ajls384kdjx98XX' },
      headers: { 'x-content-type-options': 'nosniff' },
    });
    const withKey = adapterFor({ verificationToken: TOKEN, encryptKey: KEY });
    expect(ingest(withKey, delivery(encrypted(challenge(TOKEN)))).reply).toEqual({
      status: 200,
      body: { challenge: 'ajls384kdjx98XX' },
      headers: { 'x-content-type-options': 'nosniff' },
    });
    expect(thrown(() => ingest(withKey, delivery(encrypted(challenge('wrong'))))).status).toBe(401);
    expect(thrown(() => ingest(adapterFor({ verificationToken: TOKEN }), delivery(challenge('wrong')))).status).toBe(
      401,
    );
  });

  it('refuses what is not a v2 event or cannot be read with a clear 400', () => {
    const adapter = adapterFor({ verificationToken: TOKEN });
    expect(
      thrown(() =>
        ingest(adapter, delivery('{"uuid":"x","token":"fixture-secret","type":"event_callback","event":{}}')),
      ).message,
    ).toMatch(/schema must be "2.0"/);
    expect(thrown(() => ingest(adapter, delivery('{"encrypt":"abc"}'))).message).toMatch(
      /no encryptKey: set channels\[0\]\.encryptKey/,
    );
    const badContent = fixture('feishu', 'text-p2p.json') as { event: { message: { content: string } } };
    badContent.event.message.content = '{not json';
    const error = thrown(() => ingest(adapter, delivery(JSON.stringify(badContent))));
    expect([error.status, error.code]).toEqual([400, 'bad_json']);
    const withKey = adapterFor({ verificationToken: TOKEN, encryptKey: KEY });
    expect(thrown(() => ingest(withKey, signed(encrypted('not json')))).status).toBe(400);
  });
});

describe('Feishu adapter: messages', () => {
  const adapter = adapterFor({ verificationToken: TOKEN, botOpenId: 'ou_bot' });
  const read = (name: string) => ingest(adapter, delivery(fixtureBytes('feishu', name))).events;

  it('reads a group text with its @ placeholder as the name, our bot in mentions, a group session', () => {
    const [event] = read('text-group-mention.json');
    expect(event).toMatchObject({
      sessionKey: 'feishu:group:oc_group1',
      text: '@Intake Bot status of ORD-123?',
      mentions: ['cli_a1b2c3'],
      sender: { id: 'ou_bo' },
    });
    expect(event?.fields).toMatchObject({ message_id: 'om_g1', root_id: 'om_root', parent_id: 'om_root' });
  });

  it('flattens a post to lines (links, @, emoji) and keeps its images as message resources', () => {
    const [event] = read('post.json');
    expect(event?.text).toBe('Order\nsee here (https://example.com/o/123)\n@Intake Bot please:SMILE:');
    expect(event?.media).toEqual([{ ref: 'image:om_post1:img_v2_post', type: 'image' }]);
    expect(event?.mentions).toEqual(['cli_a1b2c3']);
    // A post under a locale reads the same.
    const localized = fixture('feishu', 'post.json') as { event: { message: { content: string } } };
    localized.event.message.content = JSON.stringify({ zh_cn: JSON.parse(localized.event.message.content) });
    expect(ingest(adapter, delivery(JSON.stringify(localized))).events[0]?.text).toBe(event?.text);
  });

  it('takes images and files as message resources, with the file name', () => {
    expect(read('image.json')[0]?.media).toEqual([{ ref: 'image:om_img1:img_v2_abc', type: 'image' }]);
    expect(read('file.json')[0]?.media).toEqual([
      { ref: 'file:om_file1:file_v2_abc', type: 'document', fileName: 'report.pdf' },
    ]);
  });

  it("acknowledges bots' messages and other event types without making messages", () => {
    const fromBot = fixture('feishu', 'text-p2p.json') as { event: { sender: { sender_type: string } } };
    fromBot.event.sender.sender_type = 'app';
    expect(ingest(adapter, delivery(JSON.stringify(fromBot)))).toEqual({
      events: [],
      ignored: 1,
      reply: { status: 200, body: {} },
    });
    const read2 = fixture('feishu', 'text-p2p.json') as { header: { event_type: string } };
    read2.header.event_type = 'im.message.message_read_v1';
    expect(ingest(adapter, delivery(JSON.stringify(read2))).ignored).toBe(1);
  });
});

describe('Feishu adapter: Lark (apiBaseUrl)', () => {
  let api: TestServer;
  beforeAll(async () => {
    // Lark's open platform (open.larksuite.com) stands in on loopback, under a path of its own.
    api = await serve((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/lark/open-apis/auth/v3/tenant_access_token/internal') {
        res.end(JSON.stringify({ code: 0, msg: 'ok', tenant_access_token: 't-lark', expire: 7200 }));
        return;
      }
      res.statusCode = 404;
      res.end('{"code":404}');
    });
  });
  afterAll(() => api.close());

  it('gets the tenant token from, and downloads resources through, the configured base URL', async () => {
    const adapter = adapterFor({
      appSecret: 'app-secret',
      verificationToken: TOKEN,
      apiBaseUrl: `http://127.0.0.1:${api.port}/lark/`,
    });
    const resolved = await adapter.resolveMedia!(
      { type: 'image', ref: 'image:om_1:img_v2_k' },
      AbortSignal.timeout(5000),
    );
    expect(resolved).toEqual({
      url: `http://127.0.0.1:${api.port}/lark/open-apis/im/v1/messages/om_1/resources/img_v2_k?type=image`,
      headers: { authorization: 'Bearer t-lark' },
    });
    expect([...api.hits.keys()]).toEqual(['/lark/open-apis/auth/v3/tenant_access_token/internal']);
  });
});
