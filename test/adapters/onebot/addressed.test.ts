import { describe, expect, it } from 'vitest';
import { channelOf, normalizedFixture } from '../normalized.js';

describe('OneBot: what a message says about mentions of the bot and replies to it', () => {
  it("puts the bot's QQ number (self_id, as botId) in mentions for an at segment of it, and never @all", () => {
    const [event] = normalizedFixture(channelOf('onebot'), 'onebot', 'at-bot.json').events;
    expect(event!.botId).toBe('10001000');
    expect(event!.mentions).toEqual(['10001000']);
  });

  it('reports a message_sent as the message the bot sent (id, bot, text, session), counted as ignored and no event', () => {
    expect(normalizedFixture(channelOf('onebot'), 'onebot', 'message-sent.json')).toEqual({
      events: [],
      ignored: 1,
      reply: { status: 204 },
      sent: [
        {
          namespace: 'qq',
          messageId: '99',
          botId: '10001000',
          content: 'reply from the bot',
          sessionKey: 'qq:group:123456789',
        },
      ],
    });
  });

  it('notes a reply segment as reply_to: the id a message_sent reported, with no author (the segment names none)', () => {
    const [event] = normalizedFixture(channelOf('onebot'), 'onebot', 'reply-to-sent.json').events;
    expect(event!.fields).toEqual({ message_id: '102', reply_to: '99' });
    expect(event!.mentions).toEqual([]);
  });
});
