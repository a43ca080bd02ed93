import { describe, expect, it } from 'vitest';
import { channelOf, normalizedFixture } from '../normalized.js';

describe('LINE: what a message says about mentions of the bot and replies to it', () => {
  it("puts the bot's id (destination, as botId) in mentions for a mentionee marked isSelf, others by userId, @All as no one", () => {
    const [event] = normalizedFixture(channelOf('line'), 'line', 'group-mention.json').events;
    expect(event!.botId).toBe('Ubot');
    expect(event!.mentions).toEqual(['Ubot', 'U777']);
  });

  it('notes a quote as reply_to (quotedMessageId), with no author: LINE names none', () => {
    const [event] = normalizedFixture(channelOf('line'), 'line', 'group-mention.json').events;
    expect(event!.fields).toMatchObject({ reply_to: '5003', quote_token: 'q5010' });
    expect(event!.fields!.reply_to_sender).toBeUndefined();
    expect(event!.fields!.reply_to_bot).toBeUndefined();
  });
});
