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
