import { describe, expect, it } from 'vitest';
import { channelOf, normalizedFixture } from '../normalized.js';

describe('Feishu: what a message says about mentions of the bot and replies to it', () => {
  it("puts the bot's id (the app id) in mentions for an @ of the bot's open_id (botOpenId)", () => {
    const [event] = normalizedFixture(channelOf('feishu'), 'feishu', 'text-group-mention.json').events;
    expect(event!.botId).toBe('cli_a1b2c3');
    expect(event!.mentions).toEqual(['cli_a1b2c3']);
  });

  it("keeps the open_id when the bot's own is not configured", () => {
    const [event] = normalizedFixture(
      channelOf('feishu', { botOpenId: undefined }),
      'feishu',
      'text-group-mention.json',
    ).events;
    expect(event!.mentions).toEqual(['ou_bot']);
  });

  it('notes a reply as reply_to (its parent_id), with no author: the event names none', () => {
    const [event] = normalizedFixture(channelOf('feishu'), 'feishu', 'text-group-mention.json').events;
    expect(event!.fields).toMatchObject({ reply_to: 'om_root', parent_id: 'om_root' });
    expect(event!.fields!.reply_to_sender).toBeUndefined();
    expect(event!.fields!.reply_to_bot).toBeUndefined();
  });
});
