import { describe, expect, it } from 'vitest';
import { adapters } from '../../../src/adapters/index.js';
import type { InboundEvent } from '../../../src/events/inbound.js';
import { adapterFixtures } from '../../fixtures/adapters.js';
import { fixture } from '../../fixtures/index.js';
import { adapterOf } from '../suite.js';
import { ingest } from '../wx-kit.js';

const NOW = 1_718_000_010_000;

/** The events of a body as the named adapter reads it. */
function eventsOf(name: string, body: unknown): InboundEvent[] {
  const descriptor = adapters.find((candidate) => candidate.name === name)!;
  const adapter = adapterOf(descriptor, adapters, adapterFixtures.get(name)!, { verify: false });
  return ingest(adapter, {
    headers: { 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify(body)),
    query: new URLSearchParams(),
    now: NOW,
    authenticated: true,
  }).events;
}

describe('forwarded messages are marked in fields, their text kept', () => {
  it('Telegram: forward_origin names the original author and when the original was sent', () => {
    const [event] = eventsOf('telegram', fixture('telegram', 'forwarded.json'));
    expect(event!.text).toBe('the meeting moved to 3pm');
    expect(event!.fields).toMatchObject({
      forwarded: 'true',
      forward_sender_id: '222',
      forward_sender_name: 'Bo Li',
      forward_date: '1717990000',
    });
  });

  it('Telegram: the older forward_sender_name and forward_date mark a forward from a hidden account', () => {
    const [event] = eventsOf('telegram', fixture('telegram', 'forwarded-hidden.json'));
    expect(event!.fields).toMatchObject({
      forwarded: 'true',
      forward_sender_name: 'Someone Private',
      forward_date: '1717980000',
    });
    expect(event!.fields!.forward_sender_id).toBeUndefined();
  });

  it('Telegram: a channel post forwarded from a channel names the channel', () => {
    const body = fixture('telegram', 'text.json');
    body.message.forward_origin = { type: 'channel', chat: { id: -1001, title: 'News', type: 'channel' }, date: 10 };
    const [event] = eventsOf('telegram', body);
    expect(event!.fields).toMatchObject({ forwarded: 'true', forward_sender_id: '-1001', forward_sender_name: 'News' });
  });

  it('Telegram: a forward_origin of an unknown or inherited type, or without its party or date, is a forward with no author', () => {
    for (const [origin, date] of [
      [{ type: 'constructor', date: 10 }, '10'],
      [{ type: '__proto__', date: 10 }, '10'],
      [{ type: 'toString' }, undefined],
      [{ type: 'user', date: 'yesterday' }, undefined],
      [{ type: 'future_kind', date: 1.5, sender_user: { id: 5 } }, undefined],
      [{}, undefined],
    ] as const) {
      const body = fixture('telegram', 'text.json');
      body.message.forward_origin = origin;
      const [event] = eventsOf('telegram', body);
      expect(event!.fields!.forwarded).toBe('true');
      expect(event!.fields!.forward_sender_id).toBeUndefined();
      expect(event!.fields!.forward_sender_name).toBeUndefined();
      expect(event!.fields!.forward_date).toBe(date);
    }
  });

  it('Telegram: a forward_origin hidden_user names the sender without an id, and a negative date is kept for the output to ignore', () => {
    const body = fixture('telegram', 'text.json');
    body.message.forward_origin = { type: 'hidden_user', sender_user_name: 'Anon', date: -5 };
    const [event] = eventsOf('telegram', body);
    expect(event!.fields).toMatchObject({ forwarded: 'true', forward_sender_name: 'Anon' });
    expect(event!.fields!.forward_sender_id).toBeUndefined();
  });

  it('WhatsApp: a status receipt marked forwarded is a receipt, never a message', () => {
    const body = fixture('whatsapp', 'forwarded.json');
    const value = body.entry[0].changes[0].value;
    value.statuses = [{ id: 'wamid.S', status: 'read', recipient_id: '16505551234', context: { forwarded: true } }];
    delete value.messages;
    expect(eventsOf('whatsapp', body)).toEqual([]);
  });

  it('Telegram: a message that is no forward says nothing of forwards', () => {
    const [event] = eventsOf('telegram', fixture('telegram', 'text.json'));
    expect(event!.fields!.forwarded).toBeUndefined();
  });

  it('WhatsApp: context.forwarded and frequently_forwarded', () => {
    const [once, often] = eventsOf('whatsapp', fixture('whatsapp', 'forwarded.json'));
    expect(once!.fields).toMatchObject({ forwarded: 'true' });
    expect(once!.fields!.frequently_forwarded).toBeUndefined();
    expect(often!.fields).toMatchObject({ forwarded: 'true', frequently_forwarded: 'true' });
    expect(once!.text).toBe('转发的通知');
    const [plain] = eventsOf('whatsapp', fixture('whatsapp', 'text.json'));
    expect(plain!.fields!.forwarded).toBeUndefined();
  });

  it('Feishu: a merge_forward message is marked and reads as its placeholder', () => {
    const [event] = eventsOf('feishu', fixture('feishu', 'merge-forward.json'));
    expect(event!.fields).toMatchObject({ forwarded: 'true', message_type: 'merge_forward' });
    expect(event!.text).toBe('[merge_forward]');
  });

  it('OneBot: a forward segment gives its id, and the text a placeholder', () => {
    const [event] = eventsOf('onebot', fixture('onebot', 'forward-group.json'));
    expect(event!.fields).toMatchObject({ forwarded: 'true', forward_id: '7394826153467289' });
    expect(event!.text).toBe('[forwarded messages]');
    const cq = fixture('onebot', 'forward-group.json');
    cq.message = 'look [CQ:forward,id=99]';
    const [fromCq] = eventsOf('onebot', cq);
    expect(fromCq!.fields).toMatchObject({ forwarded: 'true', forward_id: '99' });
    expect(fromCq!.text).toBe('look [forwarded messages]');
  });
});
