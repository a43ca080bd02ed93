import { describe, expect, it } from 'vitest';
import type { Adapter } from '../../../src/adapters/kit/types.js';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

const BOT_USER = '1140000000000000001';

/** A Discord channel whose Gateway session said READY as `BOT_USER`, as it does before any message. */
function identified(): Adapter {
  const adapter = channelOf('discord');
  const session = adapter.socketDial!.session!({
    send: () => {},
    close: () => {},
    setTimeout: () => undefined,
    clearTimeout: () => {},
    now: () => 0,
    random: () => 0.5,
  });
  const ready = { op: 0, s: 1, t: 'READY', d: { v: 10, user: { id: BOT_USER, username: 'intake', bot: true } } };
  session.frame(Buffer.from(JSON.stringify(ready)));
  return adapter;
}

describe('Discord: what a message says about mentions of the bot and replies to it', () => {
  it("puts the bot user's id (READY's user.id, as botId) in mentions for a <@id> of it", () => {
    const [event] = normalizedFixture(identified(), 'discord', 'guild-message.json').events;
    expect(event!.botId).toBe(BOT_USER);
    expect(event!.mentions).toEqual([BOT_USER]);
  });

  it('marks a reply to the bot\'s message with its id, author, text and reply_to_bot "true"', () => {
    const discord = identified();
    const [event] = normalizedFixture(discord, 'discord', 'reply-to-bot.json').events;
    expect(event!.fields).toMatchObject({
      reply_to: '1180000000000000004',
      reply_to_sender: BOT_USER,
      reply_to_text: 'ORD-123 ships tomorrow.',
      reply_to_bot: 'true',
    });
    const target = { ids: event!.fields!, conversation: event!.conversation, sender: event!.sender, receivedAt: 0 };
    expect(discord.replyTo!(target).quote).toMatchObject({ messageId: '1180000000000000004', fromBot: true });
  });

  it('marks a reply to a person "false", before READY too, and leaves one to another bot or a webhook to its author', () => {
    const toPerson = fixture('discord', 'reply-to-bot.json');
    toPerson.d.referenced_message.author = { id: '1150000000000000002', username: 'bo', bot: false };
    expect(normalizedBody(identified(), toPerson).events[0]!.fields!.reply_to_bot).toBe('false');
    expect(normalizedBody(channelOf('discord'), toPerson).events[0]!.fields!.reply_to_bot).toBe('false');
    const toOtherBot = fixture('discord', 'reply-to-bot.json');
    toOtherBot.d.referenced_message.author = { id: '1140000000000000009', username: 'other', bot: true };
    const toWebhook = fixture('discord', 'reply-to-bot.json');
    toWebhook.d.referenced_message.author = { id: '1190000000000000001', username: 'alerts' };
    toWebhook.d.referenced_message.webhook_id = '1190000000000000001';
    for (const body of [toOtherBot, toWebhook]) {
      const fields = normalizedBody(identified(), body).events[0]!.fields!;
      expect(fields.reply_to_sender).toBe(body.d.referenced_message.author.id);
      expect(fields.reply_to_bot).toBeUndefined();
    }
  });

  it('keeps the id of a reply whose quoted message was deleted (referenced_message null), and takes a forward as no reply', () => {
    const deleted = fixture('discord', 'reply-to-bot.json');
    deleted.d.referenced_message = null;
    const fields = normalizedBody(identified(), deleted).events[0]!.fields!;
    expect(fields.reply_to).toBe('1180000000000000004');
    expect(fields.reply_to_sender).toBeUndefined();
    expect(fields.reply_to_bot).toBeUndefined();
    const forward = fixture('discord', 'reply-to-bot.json');
    forward.d.message_reference.type = 1;
    delete forward.d.referenced_message;
    expect(normalizedBody(identified(), forward).events[0]!.fields!.reply_to).toBeUndefined();
  });
});
