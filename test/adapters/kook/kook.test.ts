import { createDecipheriv } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { localContext } from '../../../src/adapters/kit/access-token.js';
import { KookCipher } from '../../../src/adapters/kook/body.js';
import { createAdapter, type Adapter } from '../../../src/adapters/index.js';
import type { RawDelivery } from '../../../src/adapters/kit/types.js';
import { loadConfig } from '../../../src/service/configure.js';
import { fixture } from '../../fixtures/index.js';
import { until } from '../../support/helpers.js';
import { serve } from '../../support/servers.js';
import { ingest, thrown } from '../wx-kit.js';
import { kookBody, kookEncrypt } from './seal.js';

const NOW = 1_718_000_010_000;
const TOKEN = 'fixture-secret';
const KEY = 'kook-encrypt-key';
const adapterFor = (settings: Record<string, unknown> = {}): Adapter =>
  createAdapter(
    loadConfig({
      env: {},
      file: { channels: [{ id: 'kk', adapter: 'kook', verifyToken: TOKEN, botId: '10001', ...settings }] },
    }).channels[0]!,
    undefined,
    localContext(() => NOW),
  );
const delivery = (body: Buffer | string): RawDelivery => ({
  headers: { 'content-type': 'application/json' },
  body: Buffer.from(body),
  query: new URLSearchParams(),
  now: NOW,
});
const events = (adapter: Adapter, body: unknown, options?: { encryptKey?: string; compress?: boolean }) =>
  ingest(adapter, delivery(kookBody(body, options)));

/**
 * An `encrypt` value made with another key whose decryption with KEY has no valid PKCS#7
 * padding: a random one has valid-looking padding about once in 256, and the case would fail
 * that often.
 */
function badPadding(): string {
  const ours = Buffer.alloc(32);
  Buffer.from(KEY).copy(ours);
  for (let i = 0; ; i++) {
    const iv = `iv-${String(i).padStart(13, '0')}`;
    const sealed = kookEncrypt('another-key', '{"s":0}', iv);
    const outer = Buffer.from(sealed, 'base64');
    const data = Buffer.from(outer.subarray(16).toString('latin1'), 'base64');
    const decipher = createDecipheriv('aes-256-cbc', ours, outer.subarray(0, 16)).setAutoPadding(false);
    const plain = Buffer.concat([decipher.update(data), decipher.final()]);
    const pad = plain[plain.length - 1]!;
    if (pad === 0 || pad > 16 || !plain.subarray(plain.length - pad).every((byte) => byte === pad)) return sealed;
  }
}

describe('KOOK webhook bodies', () => {
  it('decrypts the vector made by the documented algorithm (key testKey, IV 0123456789abcdef)', () => {
    const vector =
      'MDEyMzQ1Njc4OWFiY2RlZjV6R1FVaEJBaTFKQXhGcW1vT3pLNC8vek9DRjk3eDVsQ2tIcUg2QnYzSW1KR2V4cStoanFlVkt4czNGVHVFZDF0NWxqSmI4K3NKVXRKR1phK29nODM1S0VOUWRjcGdiUDg4anNUMkNMVVFJUlVtaDVKZExrb3F5UmZpeHpjQUp4V1d2clJCRkxVNlJSTFlQOG5uNDhTUT09';
    expect(new KookCipher('testKey').open(vector).toString('utf8')).toBe(
      '{"s":0,"d":{"type":255,"channel_type":"WEBHOOK_CHALLENGE","challenge":"bkes654x09XY","verify_token":"vt"}}',
    );
  });

  it('cuts an Encrypt Key longer than 32 bytes to 32, as the official Go SDK does', () => {
    const long = 'k'.repeat(40);
    const sealed = kookEncrypt('k'.repeat(32), 'hello');
    expect(new KookCipher(long).open(sealed).toString()).toBe('hello');
  });

  it('answers the challenge, deflated and encrypted, with the challenge as JSON', () => {
    const reply = events(adapterFor({ encryptKey: KEY }), fixture('kook', 'challenge.json'), { encryptKey: KEY }).reply;
    expect(reply).toMatchObject({ status: 200, body: { challenge: 'bkes654x09XY' } });
  });

  it('reads a plain JSON body (a callback URL with compress=0) as well as a deflated one', () => {
    const body = fixture('kook', 'text-person.json');
    const plain = events(adapterFor(), body, { compress: false }).events;
    const deflated = events(adapterFor(), body).events;
    expect(plain.map((event) => event.text)).toEqual(['你好']);
    expect(deflated).toEqual(plain);
  });

  it('refuses a body that is neither JSON nor zlib with a 400', () => {
    const error = thrown(() => ingest(adapterFor(), delivery(Buffer.from([0x78, 0x9c, 1, 2, 3, 4]))));
    expect([error.status, error.code]).toEqual([400, 'bad_request']);
    expect(error.message).toMatch(/neither JSON nor a zlib stream/);
  });

  it('refuses a body that inflates past the body limit with a 413', () => {
    const big = kookBody({ s: 0, d: { content: 'x'.repeat(5000) } });
    const limits = { maxDepth: 64, maxKeys: 1000, bodyLimitBytes: 1000 };
    const error = thrown(() => ingest(adapterFor(), delivery(big), limits));
    expect([error.status, error.code]).toEqual([413, 'body_too_large']);
  });

  it('refuses an encrypted body whose padding is wrong (another key) with a 400 naming encryptKey', () => {
    const body = Buffer.from(JSON.stringify({ encrypt: badPadding() }));
    const error = thrown(() => ingest(adapterFor({ encryptKey: KEY }), delivery(body)));
    expect([error.status, error.code]).toEqual([400, 'bad_request']);
    expect(error.message).toMatch(/padding is not PKCS#7.*channels\[0\]\.encryptKey/);
  });

  it('refuses a plain body on a channel with an encryptKey (401), and an encrypted one on a channel without (400)', () => {
    const event = fixture('kook', 'text-person.json');
    expect(thrown(() => events(adapterFor({ encryptKey: KEY }), event)).status).toBe(401);
    expect(thrown(() => events(adapterFor(), event, { encryptKey: KEY })).status).toBe(400);
  });

  it('refuses an event whose verify_token is not the Verify Token, challenge included (401)', () => {
    for (const name of ['text-person.json', 'challenge.json']) {
      const event = fixture('kook', name);
      event.d.verify_token = 'forged';
      const error = thrown(() => events(adapterFor(), event));
      expect([error.status, error.code]).toEqual([401, 'token_mismatch']);
      delete event.d.verify_token;
      expect(thrown(() => events(adapterFor(), event)).status).toBe(401);
    }
  });
});

describe('KOOK settings', () => {
  it('needs a botToken for the gateway, and no verifyToken there', () => {
    const file = (settings: Record<string, unknown>) => ({
      channels: [{ id: 'kk', adapter: 'kook', transport: 'ws', ...settings }],
    });
    expect(() => loadConfig({ env: {}, file: file({ verifyToken: TOKEN }) })).toThrow(
      /channels\[0\]\.botToken \(channel "kk"\): is required: the kook adapter connects to the gateway with it/,
    );
    expect(() => loadConfig({ env: {}, file: file({ botToken: 'bot-token' }) })).not.toThrow();
  });
});

describe('KOOK events', () => {
  it('makes a KMarkdown channel message a group message with its mentions read as @names', () => {
    const [event] = events(adapterFor(), fixture('kook', 'kmarkdown-group-mention.json')).events;
    expect(event).toMatchObject({
      kind: 'message',
      sessionKey: 'kook:group:chan1',
      sender: { id: '777', name: 'Ana' },
      platformId: '67637d4c-8a1b-4c1e-9d41-4a0a5c3e1f01',
      text: '@bot 帮我查一下订单',
      mentions: ['10001'],
      timestamp: 1_718_000_000,
      fields: { guild_id: 'g1', target_id: 'chan1' },
    });
  });

  it('keys a direct message by its author, and reads its chat code', () => {
    const [event] = events(adapterFor(), fixture('kook', 'text-person.json')).events;
    expect(event).toMatchObject({
      sessionKey: 'kook:777',
      conversation: { type: 'private', id: '777' },
      fields: { chat_code: '3b4aa448b8e8b9c87a1b3770792e7433' },
    });
  });

  it('takes images and files as media by their URL', () => {
    const [image] = events(adapterFor(), fixture('kook', 'image-group.json')).events;
    const [file] = events(adapterFor(), fixture('kook', 'file-person.json')).events;
    expect(image!.media).toEqual([
      { url: 'https://img.kookapp.cn/assets/2024-06/abc.png', type: 'image', fileName: 'abc.png', size: 68 },
    ]);
    expect(file!.media).toEqual([
      {
        url: 'https://img.kookapp.cn/attachments/2024-06/report.pdf',
        type: 'document',
        fileName: 'report.pdf',
        mimeType: 'application/pdf',
        size: 1024,
      },
    ]);
  });

  it("notes a reply to our bot's message from extra.quote", () => {
    const body = fixture('kook', 'kmarkdown-group-mention.json');
    body.d.extra.quote = { rong_id: 'm-earlier', author: { id: '10001' } };
    const [event] = events(adapterFor(), body).events;
    expect(event!.fields).toMatchObject({ reply_to: 'm-earlier', reply_to_sender: '10001', reply_to_bot: 'true' });
  });

  it('makes a deleted channel message a recall of that msg_id in its channel', () => {
    const [event] = events(adapterFor(), fixture('kook', 'deleted-message.json')).events;
    expect(event).toMatchObject({
      kind: 'notice',
      detail: 'deleted_message',
      sessionKey: 'kook:group:chan1',
      platformId: '67637d4c-8a1b-4c1e-9d41-4a0a5c3e1f01:deleted',
      revises: { kind: 'recall', messageId: '67637d4c-8a1b-4c1e-9d41-4a0a5c3e1f01' },
    });
  });

  it('makes a deleted direct message a recall by its author in their session', () => {
    const [event] = events(adapterFor(), fixture('kook', 'deleted-private-message.json')).events;
    expect(event).toMatchObject({
      sessionKey: 'kook:777',
      revises: { kind: 'recall', messageId: '0b8f7a2e-1c3d-4e5f-8a9b-7c6d5e4f3a21', senderId: '777' },
    });
  });

  it('makes an updated message an edit carrying the new text', () => {
    const [event] = events(adapterFor(), fixture('kook', 'updated-message.json')).events;
    expect(event).toMatchObject({
      kind: 'message',
      subType: 'edited',
      sessionKey: 'kook:group:chan1',
      text: '(edited) @10001 帮我查一下订单 ORD-1',
      fields: { edited_text: '@10001 帮我查一下订单 ORD-1' },
      revises: { kind: 'edit', messageId: '67637d4c-8a1b-4c1e-9d41-4a0a5c3e1f01' },
    });
    expect(event!.platformId).not.toBe('67637d4c-8a1b-4c1e-9d41-4a0a5c3e1f01');
  });

  it('makes other system events notices under their own msg_id', () => {
    const [event] = events(adapterFor(), fixture('kook', 'joined-guild.json')).events;
    expect(event).toMatchObject({ kind: 'notice', detail: 'joined_guild', sender: { id: '888' } });
    expect(event!.revises).toBeUndefined();
  });

  it('takes no event from a card message or a signal other than 0', () => {
    const card = fixture('kook', 'text-person.json');
    card.d.type = 10;
    expect(events(adapterFor(), card)).toMatchObject({ events: [], ignored: 1 });
    expect(events(adapterFor(), { s: 1, d: { verify_token: TOKEN } })).toMatchObject({ events: [], ignored: 1 });
  });

  it('lists botId as its bot, so its own messages are looped', () => {
    expect(adapterFor().botIds).toEqual(['10001']);
  });

  it("learns our bot's id with the bot token (GET /api/v3/user/me) and then takes no event of its messages", async () => {
    const api = await serve((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(
        req.url === '/api/v3/user/me' && req.headers.authorization === 'Bot bot-token'
          ? JSON.stringify({ code: 0, message: '操作成功', data: { id: '10001', username: 'bot', bot: true } })
          : '{"code":401,"message":"你的token无效"}',
      );
    });
    try {
      const adapter = adapterFor({
        botId: undefined,
        botToken: 'bot-token',
        apiBaseUrl: `http://127.0.0.1:${api.port}`,
      });
      const own = fixture('kook', 'text-person.json');
      own.d.author_id = '10001';
      own.d.target_id = '777';
      await until(() => events(adapter, own).ignored === 1);
      const [event] = events(adapter, fixture('kook', 'text-person.json')).events;
      expect(event).toMatchObject({ botId: '10001', sender: { id: '777' } });
    } finally {
      await api.close();
    }
  });

  it('gives a reply handle: the channel or the person as target_id, the message as quote, a reply as its quote', () => {
    const adapter = adapterFor();
    const body = fixture('kook', 'kmarkdown-group-mention.json');
    body.d.extra.quote = { rong_id: 'm-earlier', author: { id: '888' } };
    const [event] = events(adapter, body).events;
    expect(
      adapter.replyTo!({
        ids: event!.fields!,
        conversation: event!.conversation,
        sender: event!.sender,
        receivedAt: NOW,
      }),
    ).toEqual({
      params: { target_id: 'chan1', quote: '67637d4c-8a1b-4c1e-9d41-4a0a5c3e1f01' },
      messageId: '67637d4c-8a1b-4c1e-9d41-4a0a5c3e1f01',
      quote: { messageId: 'm-earlier', senderId: '888', fromBot: false },
    });
    const [direct] = events(adapter, fixture('kook', 'text-person.json')).events;
    expect(
      adapter.replyTo!({
        ids: direct!.fields!,
        conversation: direct!.conversation,
        sender: direct!.sender,
        receivedAt: NOW,
      }).params,
    ).toEqual({
      target_id: '777',
      quote: '0b8f7a2e-1c3d-4e5f-8a9b-7c6d5e4f3a21',
      chat_code: '3b4aa448b8e8b9c87a1b3770792e7433',
    });
  });
});
