import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

describe('QQ bot: what a message says about mentions of the bot and replies to it', () => {
  it("puts the bot's id (the app id) in mentions of every group and guild @ message, delivered only when it @s the bot", () => {
    for (const file of ['group-at.json', 'guild-at.json']) {
      const [event] = normalizedFixture(channelOf('qqbot'), 'qqbot', file).events;
      expect(event!.botId, file).toBe('102000001');
      expect(event!.mentions[0], file).toBe('102000001');
    }
    const [guild] = normalizedFixture(channelOf('qqbot'), 'qqbot', 'guild-at.json').events;
    expect(guild!.mentions).toEqual(['102000001', '144115218690154811']);
  });

  it('puts nothing in mentions of a direct message', () => {
    expect(normalizedFixture(channelOf('qqbot'), 'qqbot', 'c2c.json').events[0]!.mentions).toEqual([]);
  });

  it('notes a quote as reply_to (message_reference.message_id), with no author: the event names none', () => {
    const quoting = fixture('qqbot', 'group-at.json');
    quoting.d.message_reference = { message_id: 'ROBOT1.0_quoted' };
    const fields = normalizedBody(channelOf('qqbot'), quoting).events[0]!.fields!;
    expect(fields.reply_to).toBe('ROBOT1.0_quoted');
    expect(fields.reply_to_sender).toBeUndefined();
    expect(fields.reply_to_bot).toBeUndefined();
  });
});
