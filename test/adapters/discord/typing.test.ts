import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

describe('Discord TYPING_START', () => {
  it("is a typing signal for the guild channel's session, with no event", () => {
    expect(normalizedFixture(channelOf('discord'), 'discord', 'typing-start-guild.json')).toEqual({
      events: [],
      typing: [{ sessionKey: 'discord:group:1170000000000000001', senderId: '1150000000000000001' }],
    });
  });

  it("is a typing signal for the DM's session when it names no guild", () => {
    expect(normalizedFixture(channelOf('discord'), 'discord', 'typing-start-dm.json').typing).toEqual([
      { sessionKey: 'discord:1180000000000000001', senderId: '1150000000000000001' },
    ]);
  });

  it('names the same session and sender a message in that channel has', () => {
    const adapter = channelOf('discord');
    const [message] = normalizedFixture(adapter, 'discord', 'guild-message.json').events;
    const [signal] = normalizedFixture(adapter, 'discord', 'typing-start-guild.json').typing!;
    expect(signal).toEqual({ sessionKey: message!.sessionKey, senderId: message!.sender.id });
  });

  it('refuses a TYPING_START without user_id as not a Discord frame', () => {
    const body = fixture('discord', 'typing-start-dm.json');
    delete body.d.user_id;
    expect(() => normalizedBody(channelOf('discord'), body)).toThrow(/d\.user_id/);
  });

  it('passes the dispatch from the Gateway session to the pipeline, as a message is', () => {
    const session = channelOf('discord').socketDial!.session!({
      send: () => {},
      close: () => {},
      setTimeout: () => undefined,
      clearTimeout: () => {},
      now: () => 0,
      random: () => 0.5,
    });
    const frame = session.frame(Buffer.from(JSON.stringify(fixture('discord', 'typing-start-guild.json'))));
    expect(frame).toMatchObject({ kind: 'envelope' });
  });
});
