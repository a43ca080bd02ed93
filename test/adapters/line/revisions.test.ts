import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

type Source =
  | { type: 'user'; userId: string }
  | { type: 'group'; groupId: string; userId?: string }
  | { type: 'room'; roomId: string; userId: string };

/** A LINE `unsend` of message `messageId` from `source` (developers.line.biz/en/reference/messaging-api/#unsend-event). */
function unsend(source: Source, messageId: string, webhookEventId = '01HUNSEND1') {
  return {
    destination: 'Ubot',
    events: [
      {
        type: 'unsend',
        mode: 'active',
        webhookEventId,
        deliveryContext: { isRedelivery: false },
        timestamp: 1692251690000,
        source,
        unsend: { messageId },
      },
    ],
  };
}

/** A text message `id` from `source`. */
function message(source: Source, id: string, webhookEventId = '01HMSG1') {
  return {
    destination: 'Ubot',
    events: [
      {
        type: 'message',
        mode: 'active',
        webhookEventId,
        deliveryContext: { isRedelivery: false },
        timestamp: 1692251680000,
        source,
        replyToken: 'r9',
        message: { id, type: 'text', quoteToken: 'q9', text: 'take this back' },
      },
    ],
  };
}

describe('LINE: a message is keyed by its message id, and an unsend names it', () => {
  it("keys a message event by message.id, keeping webhookEventId as the delivery's id", () => {
    const [event] = normalizedFixture(channelOf('line'), 'line', 'message.json').events;
    expect(event).toMatchObject({ id: '01H810YECXQQZ37VAXPF6H9E6T', platformId: '4687' });
  });

  it('keys a redelivery by the same message id, so it is the duplicate of the first delivery', () => {
    const adapter = channelOf('line');
    const redelivery = fixture('line', 'message.json');
    redelivery.events[0].deliveryContext.isRedelivery = true;
    const [first] = normalizedFixture(adapter, 'line', 'message.json').events;
    const [again] = normalizedBody(adapter, redelivery).events;
    expect(again!.platformId).toBe(first!.platformId);
    expect(again!.id).toBe(first!.id);
  });

  it('keeps events that carry no message keyed by webhookEventId: follow, join, postback, unsend', () => {
    const adapter = channelOf('line');
    const events = normalizedFixture(adapter, 'line', 'multi.json').events;
    expect(events.map((event) => event.platformId)).toEqual(['5001', '5002', '01HFOL', '01HJOIN']);
    const postback = fixture('line', 'message.json');
    postback.events[0] = { ...postback.events[0], type: 'postback', postback: { data: 'action=buy' } };
    delete postback.events[0].message;
    expect(normalizedBody(adapter, postback).events[0]!.platformId).toBe('01H810YECXQQZ37VAXPF6H9E6T');
    expect(normalizedBody(adapter, unsend({ type: 'user', userId: 'U4af' }, '4687')).events[0]!.platformId).toBe(
      '01HUNSEND1',
    );
  });

  it.each<[string, Source, string]>([
    ['a 1:1 chat', { type: 'user', userId: 'U4af' }, 'line:U4af'],
    ['a group', { type: 'group', groupId: 'Cgrp', userId: 'U4af' }, 'line:group:Cgrp'],
    ['a room', { type: 'room', roomId: 'Rroom', userId: 'U4af' }, 'line:group:Rroom'],
  ])(
    'makes an unsend in %s a notice revising the message by the platform id it got, in its session',
    (_chat, source, sessionKey) => {
      const adapter = channelOf('line');
      const [sent] = normalizedBody(adapter, message(source, '7001')).events;
      const [recall] = normalizedBody(adapter, unsend(source, '7001')).events;
      expect(recall).toMatchObject({ kind: 'notice', detail: 'unsend', sender: { id: 'U4af' } });
      expect(recall!.revises).toEqual({ kind: 'recall', messageId: sent!.platformId, senderId: 'U4af' });
      expect(sent!.platformId).toBe('7001');
      expect(recall!.sessionKey).toBe(sent!.sessionKey);
      expect(sent!.sessionKey).toBe(sessionKey);
    },
  );

  it('names no sender when the source names no user', () => {
    const [recall] = normalizedBody(channelOf('line'), unsend({ type: 'group', groupId: 'Cgrp' }, '7002')).events;
    expect(recall!.revises).toEqual({ kind: 'recall', messageId: '7002' });
  });

  it('leaves an unsend that names no message, and other notices, without a revision', () => {
    const adapter = channelOf('line');
    const body = unsend({ type: 'user', userId: 'U4af' }, '7003') as { events: Array<Record<string, unknown>> };
    body.events[0]!.unsend = {};
    const [nameless] = normalizedBody(adapter, body).events;
    expect(nameless).toMatchObject({ kind: 'notice', detail: 'unsend' });
    expect(nameless!.revises).toBeUndefined();
    expect(normalizedFixture(adapter, 'line', 'multi.json').events.map((event) => event.revises)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});
