import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

describe('Slack: what a message says about mentions of the bot and replies to it', () => {
  it("puts the bot user's id (authorizations[0].user_id, as botId) in mentions for a <@U…> of it", () => {
    for (const file of ['message.json', 'app_mention.json']) {
      const [event] = normalizedFixture(channelOf('slack'), 'slack', file).events;
      expect(event!.botId, file).toBe('UBOT');
      expect(event!.mentions, file).toEqual(['UBOT']);
    }
  });

  it('takes the configured botUserId as the bot id over the payload', () => {
    const [event] = normalizedFixture(channelOf('slack', { botUserId: 'UOURS' }), 'slack', 'message.json').events;
    expect(event!.botId).toBe('UOURS');
  });

  it('marks a thread reply under the bot\'s message with the parent, its author and reply_to_bot "true"', () => {
    const slack = channelOf('slack');
    const [event] = normalizedFixture(slack, 'slack', 'thread-reply-to-bot.json').events;
    expect(event!.mentions).toEqual([]);
    expect(event!.fields).toMatchObject({
      reply_to: '1700000050.000200',
      reply_to_sender: 'UBOT',
      reply_to_bot: 'true',
    });
    const target = { ids: event!.fields!, conversation: event!.conversation, sender: event!.sender, receivedAt: 0 };
    expect(slack.replyTo!(target).quote).toEqual({ messageId: '1700000050.000200', senderId: 'UBOT', fromBot: true });
  });

  it("leaves a thread reply under another user's message to that author's id (Slack does not say whether a bot wrote it)", () => {
    const underOther = fixture('slack', 'thread-reply-to-bot.json');
    underOther.event.parent_user_id = 'U2';
    const named = normalizedBody(channelOf('slack'), underOther).events[0]!.fields!;
    expect(named.reply_to_sender).toBe('U2');
    expect(named.reply_to_bot).toBeUndefined();
    const unnamed = fixture('slack', 'thread-reply-to-bot.json');
    delete unnamed.event.parent_user_id;
    const fields = normalizedBody(channelOf('slack'), unnamed).events[0]!.fields!;
    expect(fields.reply_to).toBe('1700000050.000200');
    expect(fields.reply_to_sender).toBeUndefined();
    expect(fields.reply_to_bot).toBeUndefined();
  });

  it('takes the message that starts a thread as replying to nothing', () => {
    const parent = fixture('slack', 'message.json');
    parent.event.thread_ts = parent.event.ts;
    expect(normalizedBody(channelOf('slack'), parent).events[0]!.fields!.reply_to).toBeUndefined();
  });
});
