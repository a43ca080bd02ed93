import { describe, expect, it } from 'vitest';
import { createAdapter } from '../../../src/adapters/index.js';
import { milkyFrame } from '../../../src/adapters/milky/event.js';
import type { RawDelivery } from '../../../src/adapters/kit/types.js';
import { correlationKey } from '../../../src/correlate/signature.js';
import { isIntakeError, isSignatureError } from '../../../src/core/errors.js';
import { loadConfig } from '../../../src/service/configure.js';
import { fixture, fixtureBytes } from '../../fixtures/index.js';

const NOW = 1_718_000_010_000;
const channel = (settings: Record<string, unknown>, id = 'milky', adapter = 'milky') =>
  loadConfig({ env: {}, file: { channels: [{ id, adapter, ...settings }] } }).channels[0]!;
const webhook = (settings: Record<string, unknown> = {}) =>
  createAdapter(channel({ transport: 'webhook', accessToken: 'tok', ...settings }));
const delivery = (body: unknown, headers: Record<string, string> = {}, query = ''): RawDelivery => ({
  headers,
  body: Buffer.from(JSON.stringify(body)),
  query: new URLSearchParams(query),
  now: NOW,
});
const normalized = (body: unknown, adapter = webhook()) => adapter.normalize(body, delivery(body));

describe('Milky adapter', () => {
  it('refuses to start a webhook channel without its accessToken, and a WebSocket channel without its url', () => {
    expect(() => channel({ transport: 'webhook' })).toThrow(
      /channels\[0\]\.accessToken \(channel "milky"\): is required/,
    );
    expect(() => createAdapter(channel({}))).toThrow(
      /channels\[0\]\.url \(channel "milky"\): is required with "transport": "ws"/,
    );
    expect(() => createAdapter(channel({ url: 'ws://127.0.0.1:3000' }))).toThrow(
      /must be an http:\/\/ or https:\/\/ URL/,
    );
    expect(() => createAdapter(channel({ url: 'http://127.0.0.1:3000' }))).not.toThrow();
    expect(() => createAdapter(channel({ transport: 'webhook', verify: false }))).not.toThrow();
  });

  it('takes a webhook POST with the access token as a Bearer header or ?access_token=, and refuses a missing or wrong one', () => {
    const adapter = webhook();
    const body = fixture('milky', 'group-message.json');
    expect(() => adapter.verify(delivery(body, { authorization: 'Bearer tok' }))).not.toThrow();
    expect(() => adapter.verify(delivery(body, {}, 'access_token=tok'))).not.toThrow();
    const refusal = (headers: Record<string, string>) => {
      try {
        adapter.verify(delivery(body, headers));
      } catch (error) {
        return isIntakeError(error) ? { status: error.status, code: error.code } : error;
      }
      return undefined;
    };
    expect(refusal({})).toEqual({ status: 401, code: 'token_missing' });
    expect(refusal({ authorization: 'Bearer nope' })).toEqual({ status: 403, code: 'token_mismatch' });
  });

  it('refuses an HTTP POST on a channel that reads the event WebSocket', () => {
    const adapter = createAdapter(channel({ url: 'http://127.0.0.1:3000', accessToken: 'tok' }));
    let thrown: unknown;
    try {
      adapter.verify(delivery({}, { authorization: 'Bearer tok' }));
    } catch (error) {
      thrown = error;
    }
    expect(isSignatureError(thrown)).toBe(true);
    expect((thrown as Error).message).toMatch(/event WebSocket/);
  });

  it('dials <url>/event with the token and sends actions to <url>/api', () => {
    const adapter = createAdapter(channel({ url: 'https://milky.example/', accessToken: 'tok' }));
    expect(adapter.socketDial).toMatchObject({
      url: 'wss://milky.example/event',
      headers: { authorization: 'Bearer tok' },
    });
    expect(adapter.actionApi).toMatchObject({
      url: 'https://milky.example/api',
      headers: { authorization: 'Bearer tok' },
      setting: 'url',
    });
    expect(webhook().socketDial).toBeUndefined();
  });

  it('normalizes a group message: session qq:group:<group>, sender by QQ number, mention, reply to the bot, per-bot platform id', () => {
    const { events, reply } = normalized(fixture('milky', 'group-message.json'));
    expect(reply).toEqual({ status: 204 });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      kind: 'message',
      adapter: 'milky',
      namespace: 'qq',
      sessionKey: 'qq:group:123456',
      conversation: { type: 'group', id: '123456' },
      sender: { id: '777', name: 'A' },
      botId: '10001',
      platformId: '10001:group:123456:23333',
      text: 'hi',
      mentions: ['10001'],
      timestamp: 1718000000,
      fields: {
        message_seq: '23333',
        reply_to: '10001:group:123456:23330',
        reply_to_sender: '10001',
        reply_to_text: 'an earlier answer',
      },
    });
    expect(events[0]!.segments.map((segment) => segment.type)).toEqual(['reply', 'at', 'text', 'face']);
  });

  it('makes a friend message private to the peer, with its image by temporary URL', () => {
    const [event] = normalized(fixture('milky', 'friend-image.json')).events;
    expect(event).toMatchObject({
      sessionKey: 'qq:777',
      conversation: { type: 'private', id: '777' },
      platformId: '10001:friend:777:42',
      text: 'look',
      media: [{ type: 'image', url: expect.stringMatching(/^https:\/\/192\.0\.2\.1\/download\?/) }],
    });
  });

  it('gives the same correlation key as OneBot for the same group message (text, mention, face)', () => {
    const onebot = createAdapter(channel({ secret: 's' }, 'qq-http', 'onebot'));
    const ob = {
      time: 1718000000,
      self_id: 20002,
      post_type: 'message',
      message_type: 'group',
      sub_type: 'normal',
      message_id: 991,
      group_id: 123456,
      user_id: 777,
      sender: { user_id: 777, nickname: 'a', card: 'A' },
      message: [
        { type: 'reply', data: { id: '880' } },
        { type: 'at', data: { qq: '10001' } },
        { type: 'text', data: { text: ' hi' } },
        { type: 'face', data: { id: '14' } },
      ],
    };
    const [fromOneBot] = onebot.normalize(ob, delivery(ob)).events;
    const [fromMilky] = normalized(fixture('milky', 'group-message.json')).events;
    expect(correlationKey(fromMilky!)).toBe(correlationKey(fromOneBot!));
  });

  it('makes message_recall a recall of the message it names, in its session, and the same notice as a OneBot group_recall', () => {
    const [message] = normalized(fixture('milky', 'group-message.json')).events;
    const [recall] = normalized(fixture('milky', 'message-recall.json')).events;
    expect(recall).toMatchObject({ kind: 'notice', detail: 'group_recall', sessionKey: message!.sessionKey });
    expect(recall!.revises).toEqual({ kind: 'recall', messageId: message!.platformId, senderId: '777' });
    const onebot = createAdapter(channel({ secret: 's' }, 'qq-http', 'onebot'));
    const ob = {
      time: 1718000005,
      self_id: 20002,
      post_type: 'notice',
      notice_type: 'group_recall',
      group_id: 123456,
      user_id: 777,
      operator_id: 777,
      message_id: 991,
    };
    const [fromOneBot] = onebot.normalize(ob, delivery(ob)).events;
    expect(correlationKey(recall!)).toBe(correlationKey(fromOneBot!));
  });

  it('makes requests and bot_offline requests and notices, and ignores an event it does not know', () => {
    const [request] = normalized(fixture('milky', 'friend-request.json')).events;
    expect(request).toMatchObject({
      kind: 'request',
      detail: 'friend_request',
      sender: { id: '888' },
      text: 'add me',
      fields: { initiator_id: '888', user_id: '888', comment: 'add me' },
    });
    const [offline] = normalized(fixture('milky', 'bot-offline.json')).events;
    expect(offline).toMatchObject({ kind: 'notice', detail: 'bot_offline', fields: { reason: 'logged in elsewhere' } });
  });

  it("remembers the bot's own message as sent in its session, not a message in", () => {
    const own = fixture('milky', 'group-message.json');
    own.data.sender_id = 10001;
    const result = normalized(own);
    expect(result.events).toEqual([]);
    expect(result.sent).toEqual([
      expect.objectContaining({
        namespace: 'qq',
        messageId: '10001:group:123456:23333',
        botId: '10001',
        sessionKey: 'qq:group:123456',
      }),
    ]);
  });

  it('refuses a body that is not a Milky event with 400 bad_shape naming the field', () => {
    for (const [body, field] of [
      [{ time: 1, event_type: 'message_receive', data: {} }, /self_id is required/],
      [{ time: 1, self_id: 1, event_type: 'message_receive', data: { message_scene: 'x' } }, /message_scene must be/],
      [{ time: 1, self_id: 1, event_type: 'message_receive' }, /data is required/],
    ] as const) {
      let thrown: unknown;
      try {
        normalized(body);
      } catch (error) {
        thrown = error;
      }
      expect(isIntakeError(thrown) && thrown.status === 400 && thrown.code === 'bad_shape').toBe(true);
      expect((thrown as Error).message).toMatch(field);
    }
  });

  it('remembers a send by the id its own event will have: bot, scene, peer and the answered message_seq', () => {
    const adapter = webhook({ url: 'http://127.0.0.1:3000' });
    const answer = { status: 'ok', retcode: 0, data: { message_seq: 23340, time: 1718000020 } };
    expect(adapter.sentByAction?.('send_group_message', answer, { params: { group_id: 123456 }, botId: '10001' })).toBe(
      '10001:group:123456:23340',
    );
    expect(adapter.sentByAction?.('send_private_message', answer, { params: { user_id: 777 }, botId: '10001' })).toBe(
      '10001:friend:777:23340',
    );
    expect(adapter.sentByAction?.('get_login_info', answer, { params: {}, botId: '10001' })).toBeUndefined();
    expect(adapter.sendsMessage?.('send_group_message')).toBe(true);
  });

  it('gives the reply handle group_id or user_id and the message_seq a reply segment quotes', () => {
    const adapter = webhook();
    const [event] = normalized(fixture('milky', 'group-message.json'), adapter).events;
    const parts = adapter.replyTo!({
      ids: event!.fields!,
      conversation: event!.conversation,
      sender: event!.sender,
      botId: '10001',
      receivedAt: NOW,
    });
    expect(parts).toMatchObject({
      params: { group_id: 123456, message_seq: 23333 },
      messageId: '23333',
      quote: { messageId: '10001:group:123456:23330', senderId: '10001' },
    });
  });

  it('reads the bot of a socket frame from its envelope, never from text inside it', () => {
    expect(milkyFrame(fixtureBytes('milky', 'group-message.json'))).toMatchObject({ kind: 'envelope', botId: '10001' });
    const sly = Buffer.from(JSON.stringify({ event_type: 'x', data: { text: '"self_id": 666' } }));
    expect(milkyFrame(sly)).toEqual({ kind: 'envelope', body: sly });
  });
});
