import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

// The bot's id is the numeric prefix of its token (core.telegram.org/bots/api#authorizing-your-bot).
const bot = () => channelOf('telegram', { botToken: '123456:ABC-DEF', botUsername: '@intake_bot' });

describe('Telegram: what a message says about mentions of the bot and replies to it', () => {
  it("puts the bot's id in mentions for an @username mention of it in the text", () => {
    const [event] = normalizedFixture(bot(), 'telegram', 'group.json').events;
    expect(event!.botId).toBe('123456');
    expect(event!.mentions).toEqual(['123456']);
  });

  it('reads a mention in a caption (caption_entities), in any case, beside other usernames', () => {
    const [event] = normalizedFixture(bot(), 'telegram', 'caption-mention.json').events;
    expect(event!.mentions).toEqual(['123456', 'ops_lead']);
  });

  it('marks a reply to the bot\'s own message with its id, author and text, and reply_to_bot "true"', () => {
    const [event] = normalizedFixture(bot(), 'telegram', 'reply-to-bot.json').events;
    expect(event!.mentions).toEqual([]);
    expect(event!.fields).toMatchObject({
      reply_to: '90',
      reply_to_sender: '123456',
      reply_to_text: 'ORD-123 ships tomorrow.',
      reply_to_bot: 'true',
    });
    expect(
      bot().replyTo!({ ids: event!.fields!, conversation: event!.conversation, sender: event!.sender, receivedAt: 0 })
        .quote,
    ).toEqual({
      messageId: '90',
      senderId: '123456',
      text: 'ORD-123 ships tomorrow.',
      content: 'ORD-123 ships tomorrow.',
      fromBot: true,
    });
  });

  it('marks a reply to a person reply_to_bot "false"', () => {
    const [event] = normalizedFixture(bot(), 'telegram', 'caption-mention.json').events;
    expect(event!.fields).toMatchObject({ reply_to: '88', reply_to_sender: '333', reply_to_bot: 'false' });
  });

  it("leaves a reply to another bot to its author's id, token or not (it may be another of our bots)", () => {
    const other = fixture('telegram', 'reply-to-bot.json');
    other.message.reply_to_message.from = { id: 777, is_bot: true, first_name: 'Other' };
    for (const adapter of [bot(), channelOf('telegram', { botToken: undefined, secretToken: 's' })]) {
      const fields = normalizedBody(adapter, other).events[0]!.fields!;
      expect(fields.reply_to_sender).toBe('777');
      expect(fields.reply_to_bot).toBeUndefined();
    }
  });
});
