import { describe, expect, it } from 'vitest';
import { createAdapter } from '../../../src/adapters/index.js';
import { loadConfig } from '../../../src/service/configure.js';
import { fixture } from '../../fixtures/index.js';

const adapter = () => {
  const [channel] = loadConfig({
    env: {},
    file: { channels: [{ id: 'gc', adapter: 'googlechat', audience: '1234567890' }] },
  }).channels;
  return createAdapter(channel!);
};
const delivery = { headers: {}, body: Buffer.alloc(0), query: new URLSearchParams(), now: 1_718_000_010_000 };

describe('the Google Chat adapter', () => {
  it("reads a space message: argumentText without the app's mention, every USER_MENTION, its name as platform id, the thread in the reply", () => {
    const chat = adapter();
    const { events, reply } = chat.normalize(fixture('googlechat', 'message-space.json'), delivery);
    expect(reply).toEqual({ status: 200, body: {} });
    expect(events).toMatchObject([
      {
        kind: 'message',
        platformId: 'spaces/AAAAroom/messages/m1.m1',
        sessionKey: 'googlechat:group:spaces/AAAAroom',
        sender: { id: 'users/111', name: 'Ada Lovelace' },
        text: 'can you check order 42 with @Bob',
        mentions: ['users/app-1', 'users/222'],
        timestamp: 1_718_000_000,
      },
    ]);
    expect(
      chat.replyTo!({
        ids: events[0]!.fields!,
        conversation: events[0]!.conversation,
        sender: events[0]!.sender,
        receivedAt: 0,
      }),
    ).toEqual({
      params: { parent: 'spaces/AAAAroom', thread: 'spaces/AAAAroom/threads/t1' },
      messageId: 'spaces/AAAAroom/messages/m1.m1',
    });
  });

  it('keys a direct message by its space alone, and acknowledges a card click without an event', () => {
    const chat = adapter();
    expect(chat.normalize(fixture('googlechat', 'message-dm.json'), delivery).events[0]).toMatchObject({
      sessionKey: 'googlechat:spaces/BBBBdm',
      text: 'hello there',
    });
    const click = { type: 'CARD_CLICKED', space: { name: 'spaces/AAAAroom', type: 'ROOM' } };
    expect(chat.normalize(click, delivery)).toEqual({ events: [], ignored: 1, reply: { status: 200, body: {} } });
  });

  it('refuses a message without its name, and a time that is not RFC 3339, with 400 bad_shape', () => {
    const chat = adapter();
    const event = fixture('googlechat', 'message-dm.json') as any;
    expect(() => chat.normalize({ ...event, message: { ...event.message, name: undefined } }, delivery)).toThrow(
      /message\.name is required/,
    );
    expect(() =>
      chat.normalize({ ...event, message: { ...event.message, createTime: 'yesterday' } }, delivery),
    ).toThrow(/must be an RFC 3339 time/);
  });
});
