import { describe, expect, it } from 'vitest';
import { addressRules, afterMentions, triggerOf } from '../../src/activation/addressed.js';
import { reachDefaults } from '../../src/config/activation.js';
import type { InboundEvent } from '../../src/events/inbound.js';

const message = (text: string, more: Partial<InboundEvent> = {}): InboundEvent => ({
  id: 'm1',
  kind: 'message',
  channel: 'qq-a',
  adapter: 'onebot',
  namespace: 'qq',
  botId: '100',
  conversation: { type: 'group', id: '42' },
  sessionKey: 'qq:group:42',
  sender: { id: 'u1' },
  segments: [],
  text,
  media: [],
  mentions: [],
  timestamp: 100,
  raw: undefined,
  ...more,
});

const rules = addressRules({
  ...reachDefaults.activation,
  wakeWords: ['Bot', '小助手'],
  patterns: ['\\bweather\\b'],
});
/** Our bots: 100 (the receiving one) and 200, in namespace qq. */
const bots = { isOwnBot: (namespace: string, id: string) => namespace === 'qq' && (id === '100' || id === '200') };
const sentIds = new Set(['qq:100:777']);
const sent = async (namespace: string, botId: string | undefined, id: string) =>
  sentIds.has(`${namespace}:${botId}:${id}`) ? true : undefined;
const trigger = (event: InboundEvent, with_ = rules) => triggerOf(event, with_, bots, sent);

describe('what addresses one message to our bots', () => {
  it('is a mention of the receiving bot or of another of ours, not of a member', async () => {
    expect(await trigger(message('@bot hi', { mentions: ['100'] }))).toBe('mention');
    expect(await trigger(message('@other bot hi', { mentions: ['200'] }))).toBe('mention');
    expect(await trigger(message('@alice hi', { mentions: ['u7'] }))).toBeUndefined();
  });

  it('is a reply to a bot: as the platform says, by the quoted author, or by the messages our bots sent', async () => {
    expect(await trigger(message('yes', { fields: { reply_to: '5', reply_to_bot: 'true' } }))).toBe('reply');
    expect(
      await trigger(message('yes', { fields: { reply_to: '5', reply_to_bot: 'false', reply_to_sender: '100' } })),
    ).toBeUndefined();
    expect(await trigger(message('yes', { fields: { reply_to: '5', reply_to_sender: '200' } }))).toBe('reply');
    expect(await trigger(message('yes', { fields: { reply_to: '5', reply_to_sender: 'u9' } }))).toBeUndefined();
    expect(await trigger(message('yes', { fields: { reply_to: '777' } }))).toBe('reply');
    expect(await trigger(message('yes', { fields: { reply_to: '778' } }))).toBeUndefined();
    const off = { ...rules, replyToBot: false };
    expect(await trigger(message('yes', { fields: { reply_to: '5', reply_to_bot: 'true' } }), off)).toBeUndefined();
  });

  it('is a wake word at the start, in any case, after leading mentions, not the start of a longer word', async () => {
    expect(await trigger(message('bot, what time is it'))).toBe('wake');
    expect(await trigger(message('  BOT what time'))).toBe('wake');
    expect(await trigger(message('@alice <@U1> bot what time'))).toBe('wake');
    expect(await trigger(message('小助手今天天气'))).toBe('wake');
    expect(await trigger(message('bottle of water'))).toBeUndefined();
    expect(await trigger(message('ask the bot'))).toBeUndefined();
  });

  it('is a pattern anywhere in the text (flag i), or a /command', async () => {
    expect(await trigger(message('What is the WEATHER like'))).toBe('pattern');
    expect(await trigger(message('/reset now'))).toBe('command');
    expect(await trigger(message('@bot /help'))).toBe('command');
    expect(await trigger(message('/ alone'))).toBeUndefined();
    expect(await trigger(message('/reset', {}), { ...rules, commands: false })).toBeUndefined();
  });

  it('is never a notice or a request', async () => {
    expect(await trigger(message('', { kind: 'notice', mentions: ['100'] }))).toBeUndefined();
  });

  it('reads past leading mentions in one pass, whatever their number', () => {
    expect(afterMentions('@a @b <@U1>  hello @c')).toBe('hello @c');
    const many = '@x '.repeat(200_000) + 'hi';
    expect(afterMentions(many)).toBe('hi');
  });
});
