import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

const bot = () => channelOf('telegram', { botToken: '123456:ABC-DEF' });

describe('Telegram: an edited message', () => {
  it('reads "(edited) …" as before, with the text as it is now in fields.edited_text, in the chat of the message', () => {
    const telegram = bot();
    const [edit] = normalizedFixture(telegram, 'telegram', 'edited.json').events;
    expect(edit).toMatchObject({ subType: 'edited', text: '(edited) hi there', sessionKey: 'tg:111' });
    expect(edit!.fields).toEqual({ message_id: '1365', edited_text: 'hi there' });
  });

  it('names the message it revises by the key the message itself has: the bot, the chat and the message id', () => {
    const telegram = bot();
    const [message] = normalizedBody(telegram, {
      update_id: 10001,
      message: {
        message_id: 1365,
        from: { id: 111, first_name: 'Ana' },
        chat: { id: 111, type: 'private' },
        date: 1441645532,
        text: 'hi',
      },
    }).events;
    const [edit] = normalizedFixture(telegram, 'telegram', 'edited.json').events;
    expect(message!.platformId).toBe('123456:111:1365');
    expect(edit!.revises).toEqual({ kind: 'edit', messageId: '123456:111:1365', senderId: '111' });
    // an event of its own: a second edit is not a retry of the first
    expect(edit!.platformId).toMatch(/^123456:111:1365:edit:\d+$/);
    expect(edit!.sessionKey).toBe(message!.sessionKey);
  });

  it('takes an edited channel post alike', () => {
    const post = fixture('telegram', 'edited.json');
    const body = {
      update_id: 10003,
      edited_channel_post: { ...post.edited_message, chat: { id: -100123, type: 'channel', title: 'news' } },
    };
    delete body.edited_channel_post.from;
    const [edit] = normalizedBody(bot(), body).events;
    expect(edit).toMatchObject({ subType: 'edited', text: '(edited) hi there', sessionKey: 'tg:group:-100123' });
    expect(edit!.fields!.edited_text).toBe('hi there');
  });

  it('puts no edited_text on a message that is no edit', () => {
    const [message] = normalizedFixture(bot(), 'telegram', 'text.json').events;
    expect(message!.fields!.edited_text).toBeUndefined();
  });
});
