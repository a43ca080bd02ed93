import { describe, expect, it } from 'vitest';
import { replyFields, type ReplyTo } from '../../src/emit/reply.js';
import type { BufferedPart, CorrelationRecord, InboundEvent } from '../../src/events/inbound.js';

const event = (id: string, fields: Record<string, string>, botId = 'A'): InboundEvent => ({
  id,
  kind: 'message',
  channel: `qq-${botId.toLowerCase()}`,
  adapter: 'onebot',
  namespace: 'qq',
  botId,
  conversation: { type: 'group', id: '42' },
  sessionKey: 'qq:group:42',
  sender: { id: 'u1' },
  platformId: `${botId}:${id}`,
  segments: [],
  text: id,
  media: [],
  mentions: [],
  timestamp: 100,
  fields,
  raw: undefined,
});
const part = (e: InboundEvent, correlationKey?: string): BufferedPart => ({
  id: e.id,
  debounceKey: 'k',
  receivedAt: 5_000,
  event: e,
  ...(correlationKey ? { correlationKey } : {}),
});
const group = (copies: Array<[bot: string, ids: Record<string, string>, at: number]>): CorrelationRecord => ({
  key: 'g',
  kind: 'message',
  firstAt: 0,
  expiresAt: 0,
  time: 100,
  deliveries: copies.map(([bot, ids, at]) => ({
    channel: `qq-${bot.toLowerCase()}`,
    adapter: 'onebot',
    botId: bot,
    ids,
    at,
  })),
});
/** A stand-in adapter: its params name the bot's own message id and when its copy came. */
const replyTo: ReplyTo = (channel, target) => ({
  params: {
    channel,
    ...(target.ids.message_id ? { message_id: target.ids.message_id } : {}),
    receivedAt: target.receivedAt,
  },
  ...(target.ids.message_id ? { messageId: target.ids.message_id } : {}),
  ...(target.ids.reply_to ? { quote: { messageId: target.ids.reply_to } } : {}),
});

describe('replyFields', () => {
  it('builds the handle of the answering bot from its own copy, and reads the quote as that bot sees it', () => {
    const copies = group([
      ['A', { message_id: '1', reply_to: '0a' }, 5_000],
      ['B', { message_id: '901', reply_to: '900' }, 5_020],
    ]);
    const fields = replyFields(
      [part(event('1', { message_id: '1', reply_to: '0a' }), 'g')],
      [copies],
      { channel: 'qq-b', botId: 'B' },
      replyTo,
    );
    expect(fields).toEqual({
      reply: { channel: 'qq-b', botId: 'B', params: { channel: 'qq-b', message_id: '901', receivedAt: 5_020 } },
      quote: { messageId: '900' },
      parts: [
        {
          messageId: 'A:1',
          timestamp: 100,
          senderId: 'u1',
          quote: { messageId: '900' },
          bots: [
            { channel: 'qq-a', botId: 'A', messageId: '1' },
            { channel: 'qq-b', botId: 'B', messageId: '901' },
          ],
        },
      ],
    });
  });

  it("gives a mentioned bot that received nothing the conversation's handle, without a message id", () => {
    const fields = replyFields([part(event('1', { message_id: '1' }))], [], { channel: 'qq-c', botId: 'C' }, replyTo);
    expect(fields.reply).toEqual({ channel: 'qq-c', botId: 'C', params: { channel: 'qq-c', receivedAt: 5_000 } });
    expect(fields.parts[0]!.bots).toEqual([{ channel: 'qq-a', botId: 'A', messageId: '1' }]);
  });

  it("replies to the last part, quotes what the first quoting part quotes, and keeps every part's ids", () => {
    const parts = [
      part(event('1', { message_id: '1' })),
      part(event('2', { message_id: '2', reply_to: '0' })),
      part(event('3', { message_id: '3' })),
    ];
    const fields = replyFields(parts, [], { channel: 'qq-a', botId: 'A' }, replyTo);
    expect(fields.reply?.params.message_id).toBe('3');
    expect(fields.quote).toEqual({ messageId: '0' });
    expect(fields.parts.map((p) => [p.messageId, p.bots[0]!.messageId, p.quote?.messageId])).toEqual([
      ['A:1', '1', undefined],
      ['A:2', '2', '0'],
      ['A:3', '3', undefined],
    ]);
  });

  it("has no handle when no adapter answers for the bot's channel", () => {
    const fields = replyFields([part(event('1', { message_id: '1' }))], [], { channel: 'gone' }, (channel, target) =>
      channel === 'gone' ? undefined : replyTo(channel, target),
    );
    expect(fields.reply).toBeUndefined();
    expect(fields.parts).toHaveLength(1);
  });
});
