import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

/** A guild deletion of the message `d` of a fixture, `{message, op_user}` (bot.q.qq.com/wiki event-emit.md). */
const deletion = (type: string, d: Record<string, unknown>, operator = '144115218678093383') => ({
  op: 0,
  id: `${type}:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0`,
  s: 9,
  t: type,
  d: {
    message: { id: d.id, channel_id: d.channel_id, guild_id: d.guild_id, author: d.author },
    op_user: { id: operator },
  },
});

describe('QQ bot: guild deletions name the message they take back', () => {
  it('makes a PUBLIC_MESSAGE_DELETE a notice revising the message by its platform id, in its channel session', () => {
    const qq = channelOf('qqbot');
    const [message] = normalizedFixture(qq, 'qqbot', 'guild-at.json').events;
    const result = normalizedBody(qq, deletion('PUBLIC_MESSAGE_DELETE', fixture('qqbot', 'guild-at.json').d));
    expect(result.reply).toEqual({ status: 200, body: { op: 12, d: 0 } });
    const [notice] = result.events;
    expect(notice).toMatchObject({
      kind: 'notice',
      detail: 'public_message_delete',
      sender: { id: '144115218678093383' },
      text: '',
      fields: { message_id: message!.platformId, operator_id: '144115218678093383', channel_id: '100010' },
    });
    expect(notice!.revises).toEqual({ kind: 'recall', messageId: message!.platformId, senderId: '144115218678093383' });
    expect(notice!.sessionKey).toBe(message!.sessionKey);
    expect(notice!.platformId).not.toBe(message!.platformId);
  });

  it('takes a MESSAGE_DELETE (private bots) alike', () => {
    const qq = channelOf('qqbot');
    const [message] = normalizedFixture(qq, 'qqbot', 'guild-at.json').events;
    const [notice] = normalizedBody(qq, deletion('MESSAGE_DELETE', fixture('qqbot', 'guild-at.json').d)).events;
    expect(notice!.revises!.messageId).toBe(message!.platformId);
    expect(notice!.sessionKey).toBe(message!.sessionKey);
  });

  it('keys a DIRECT_MESSAGE_DELETE as the DM of its guild, as the DM messages are', () => {
    const qq = channelOf('qqbot');
    const [message] = normalizedFixture(qq, 'qqbot', 'guild-dm.json').events;
    const [notice] = normalizedBody(qq, deletion('DIRECT_MESSAGE_DELETE', fixture('qqbot', 'guild-dm.json').d)).events;
    expect(notice!.revises).toEqual({ kind: 'recall', messageId: message!.platformId, senderId: '144115218678093383' });
    expect(notice!.sessionKey).toBe(message!.sessionKey);
    expect(notice!.sessionKey).toBe('qqbot:dm:18700000000002');
  });

  it("ignores, as before, the deletion of a bot's message", () => {
    const d = { ...fixture('qqbot', 'guild-at.json').d, author: { id: '11621184437953393940', bot: true } };
    expect(normalizedBody(channelOf('qqbot'), deletion('PUBLIC_MESSAGE_DELETE', d))).toEqual({
      events: [],
      ignored: 1,
      reply: { status: 200, body: { op: 12, d: 0 } },
    });
  });
});
