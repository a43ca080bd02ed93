import { describe, expect, it } from 'vitest';
import { adapters } from '../../../src/adapters/index.js';
import type { Adapter } from '../../../src/adapters/kit/types.js';
import type { InboundEvent } from '../../../src/events/inbound.js';
import type { ReplyParts } from '../../../src/events/reply.js';
import { adapterFixtures } from '../../fixtures/adapters.js';
import { fixture, fixtureBytes } from '../../fixtures/index.js';
import { adapterOf } from '../suite.js';
import { ingest, seal } from '../wx-kit.js';

const NOW = 1_718_000_010_000;
const RECEIVED = NOW + 5;

function adapter(name: string, extra: Record<string, unknown> = {}): Adapter {
  const descriptor = adapters.find((candidate) => candidate.name === name)!;
  return adapterOf(descriptor, adapters, adapterFixtures.get(name)!, { verify: false, ...extra });
}

/** The one event of a body as the adapter reads it, and the reply handle of its own bot's copy. */
function handleOf(
  name: string,
  body: unknown,
  options: { extra?: Record<string, unknown>; query?: URLSearchParams; contentType?: string } = {},
): { event: InboundEvent; reply: ReplyParts } {
  const chosen = adapter(name, options.extra);
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
  const { events } = ingest(chosen, {
    headers: { 'content-type': options.contentType ?? 'application/json' },
    body: bytes,
    query: options.query ?? new URLSearchParams(),
    now: NOW,
    authenticated: true,
  });
  const event = events[0]!;
  const reply = chosen.replyTo!({
    ids: event.fields ?? {},
    conversation: event.conversation,
    sender: event.sender,
    ...(event.botId ? { botId: event.botId } : {}),
    receivedAt: RECEIVED,
  });
  return { event, reply };
}

describe('reply handles, one per platform, from realistic deliveries', () => {
  it('every adapter builds one', () => {
    for (const descriptor of adapters)
      expect(typeof adapter(descriptor.name).replyTo, descriptor.name).toBe('function');
  });

  it('Telegram: chat_id and reply_parameters.message_id (the message, not the update), the forum topic, and reply_to_message as the quote', () => {
    expect(handleOf('telegram', fixture('telegram', 'group.json')).reply).toEqual({
      params: { chat_id: -100123, reply_parameters: { message_id: 77 } },
      messageId: '77',
    });
    const inTopic = fixture('telegram', 'group.json');
    Object.assign(inTopic.message, {
      is_topic_message: true,
      message_thread_id: 5,
      reply_to_message: {
        message_id: 70,
        from: { id: 333, is_bot: false, first_name: 'Cy' },
        chat: inTopic.message.chat,
        date: 1441645500,
        text: 'ORD-123 is late',
      },
    });
    expect(handleOf('telegram', inTopic).reply).toEqual({
      params: { chat_id: -100123, message_thread_id: 5, reply_parameters: { message_id: 77 } },
      messageId: '77',
      quote: { messageId: '70', senderId: '333', text: 'ORD-123 is late', content: 'ORD-123 is late', fromBot: false },
    });
    // In a forum, a message that replies to nothing still "replies" to its topic's creation: no quote.
    const plainInTopic = fixture('telegram', 'group.json');
    Object.assign(plainInTopic.message, {
      is_topic_message: true,
      message_thread_id: 5,
      reply_to_message: {
        message_id: 5,
        chat: plainInTopic.message.chat,
        date: 1441645000,
        forum_topic_created: { name: 'Ops', icon_color: 1 },
      },
    });
    expect(handleOf('telegram', plainInTopic).reply.quote).toBeUndefined();
  });

  it("OneBot: message_type, group_id and this bot's own message_id; the reply segment is the quote", () => {
    expect(handleOf('onebot', fixture('onebot', 'napcat-group.json')).reply).toEqual({
      params: { message_type: 'group', group_id: 123456789, message_id: -2147480001 },
      messageId: '-2147480001',
      quote: { messageId: '-2147480000' },
    });
    expect(handleOf('onebot', fixture('onebot', 'gocqhttp-group.json')).reply).toEqual({
      params: { message_type: 'group', group_id: 123456789, message_id: 884213 },
      messageId: '884213',
      quote: { messageId: '884200' },
    });
    expect(handleOf('onebot', fixture('onebot', 'private-vector.json')).reply.params).toMatchObject({
      message_type: 'private',
      user_id: expect.any(Number),
    });
  });

  it('Slack: channel and thread_ts (the message itself starts the thread; a reply stays in its thread and quotes its parent)', () => {
    expect(handleOf('slack', fixture('slack', 'message.json')).reply).toEqual({
      params: { channel: 'C1', thread_ts: '1700000000.000100' },
      messageId: '1700000000.000100',
    });
    const inThread = fixture('slack', 'message.json');
    inThread.event.thread_ts = '1699999999.000200';
    expect(handleOf('slack', inThread).reply).toEqual({
      params: { channel: 'C1', thread_ts: '1699999999.000200' },
      messageId: '1700000000.000100',
      quote: { messageId: '1699999999.000200' },
    });
  });

  it('LINE: the replyToken with its one-minute expiry, the source to push to, the quoteToken, and quotedMessageId as the quote', () => {
    expect(handleOf('line', fixture('line', 'message.json')).reply).toEqual({
      params: { to: 'U4af', replyToken: '38ef', quoteToken: 'q' },
      messageId: '4687',
      expiresAt: RECEIVED + 60_000,
    });
    const inGroup = fixture('line', 'message.json');
    inGroup.events[0].source = { type: 'group', groupId: 'Cgrp', userId: 'U4af' };
    inGroup.events[0].message.quotedMessageId = '4600';
    expect(handleOf('line', inGroup).reply).toMatchObject({
      params: { to: 'Cgrp', replyToken: '38ef' },
      quote: { messageId: '4600' },
    });
  });

  it('WhatsApp: to and context.message_id; the message it answers (context.id) is the quote', () => {
    expect(handleOf('whatsapp', fixture('whatsapp', 'text.json')).reply).toEqual({
      params: { to: '16505551234', context: { message_id: 'wamid.HBgL1' } },
      messageId: 'wamid.HBgL1',
    });
    const answering = fixture('whatsapp', 'text.json');
    answering.entry[0].changes[0].value.messages[0].context = { from: '15550001111', id: 'wamid.OUR1' };
    expect(handleOf('whatsapp', answering).reply.quote).toEqual({ messageId: 'wamid.OUR1', senderId: '15550001111' });
  });

  it("QQ bot: the scene's target and msg_id for a passive reply, good for 5 minutes", () => {
    expect(handleOf('qqbot', fixture('qqbot', 'group-at.json')).reply).toEqual({
      params: {
        group_openid: 'C9F778FE6ADF9D1D1DBE395BF744A33A',
        msg_id: 'ROBOT1.0_eBIyWnxpmSu6uLQ7u7fU0eGloKGYg4eEa737vRyKnMCgyZjKi7JLYkQ9B0VapbiY',
      },
      messageId: 'ROBOT1.0_eBIyWnxpmSu6uLQ7u7fU0eGloKGYg4eEa737vRyKnMCgyZjKi7JLYkQ9B0VapbiY',
      expiresAt: RECEIVED + 300_000,
    });
    expect(handleOf('qqbot', fixture('qqbot', 'guild-at.json')).reply.params).toEqual({
      channel_id: '100010',
      msg_id: '08e092eeb983afef9e011080d80b38a4a9b4ea0548e3a3c5f105',
    });
    expect(handleOf('qqbot', fixture('qqbot', 'guild-dm.json')).reply.params).toMatchObject({
      guild_id: expect.any(String),
      msg_id: expect.any(String),
    });
    expect(handleOf('qqbot', fixture('qqbot', 'c2c.json')).reply.params).toMatchObject({
      openid: expect.any(String),
      msg_id: expect.any(String),
    });
  });

  it('Feishu: the message_id to reply to and the chat_id; parent_id is the quote', () => {
    expect(handleOf('feishu', fixture('feishu', 'text-group-mention.json')).reply).toEqual({
      params: { chat_id: 'oc_group1', message_id: 'om_g1' },
      messageId: 'om_g1',
      quote: { messageId: 'om_root' },
    });
  });

  it('DingTalk: the sessionWebhook until its own expiry, the robotCode and the group', () => {
    expect(handleOf('dingtalk', fixture('dingtalk', 'text-group-at.json')).reply).toEqual({
      params: {
        openConversationId: 'cidKJ4A+Fz1bdUbqWuOXXQm0Q==',
        robotCode: 'dingxq2ftr6iwcu6zzur',
        sessionWebhook: 'https://oapi.dingtalk.com/robot/sendBySession?session=0c7ad1f9be3c46b2a8f7a21e55d1c0de',
      },
      messageId: 'msgRZ1hvnx0Kw3Pq2cZ7n2Aqg==',
      expiresAt: 1718005460000,
    });
    expect(handleOf('dingtalk', fixture('dingtalk', 'text-single.json')).reply.params).toMatchObject({
      userId: expect.any(String),
    });
  });

  it("Discord: channel_id and message_reference.message_id; a reply's message_reference is the quote", () => {
    expect(handleOf('discord', fixture('discord', 'reply.json')).reply).toEqual({
      params: { channel_id: '1170000000000000001', message_reference: { message_id: '1180000000000000003' } },
      messageId: '1180000000000000003',
      quote: { messageId: '1180000000000000001' },
    });
  });

  it('WeChat: touser for a customer service message, open for 48 hours', () => {
    expect(handleOf('wechat', fixtureBytes('wechat', 'text.xml'), { contentType: 'text/xml' }).reply).toEqual({
      params: { touser: 'oRd5a6kQd3Xh8Zy1Lm2NpQ7sT9uV' },
      messageId: '6054768590064713756',
      expiresAt: RECEIVED + 48 * 3600_000,
    });
  });

  it('WeCom: chatid in a group chat, touser and agentid in the app', () => {
    const settings = adapterFixtures.get('wecom')!.settings as Record<string, string>;
    const sealed = (name: string) =>
      seal({
        token: 'fixture-secret',
        key: settings.encodingAESKey!,
        receiveId: settings.corpId!,
        message: fixtureBytes('wecom', name).toString(),
        timestamp: String(NOW / 1000),
        toUser: settings.corpId!,
        agentId: settings.agentId!,
      });
    const group = sealed('group-text.xml');
    expect(handleOf('wecom', group.body, { contentType: 'text/xml', query: group.query }).reply).toEqual({
      params: { chatid: 'wrkSFfCgAAtMQKg4xqDatM5C9IvFKbLw' },
      messageId: '7381234567890123457',
    });
    const direct = sealed('text.xml');
    expect(handleOf('wecom', direct.body, { contentType: 'text/xml', query: direct.query }).reply.params).toEqual({
      touser: expect.any(String),
      agentid: 1000002,
    });
  });

  it("generic: the conversation and the sender's message id, for the agent's own answer path", () => {
    expect(
      handleOf('generic', { id: 'm-1', sessionKey: 'cli:ana', content: 'hello' }, { extra: { secret: undefined } })
        .reply,
    ).toEqual({
      params: { conversationId: 'cli:ana', messageId: 'm-1' },
      messageId: 'm-1',
    });
  });
});
