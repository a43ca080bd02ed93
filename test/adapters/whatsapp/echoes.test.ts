import { describe, expect, it } from 'vitest';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

/**
 * A `smb_message_echoes` change as Meta's webhook reference shows it: a message the business
 * typed in the WhatsApp Business app, `from` the business, `to` the customer.
 */
const echoes = (echo: Record<string, unknown>[]) => ({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: '1022',
      changes: [
        {
          field: 'smb_message_echoes',
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: '15550001111', phone_number_id: '1065' },
            message_echoes: echo,
          },
        },
      ],
    },
  ],
});

const typed = {
  from: '15550001111',
  to: '16505551234',
  id: 'wamid.HBgLECHO1',
  timestamp: '1749416400',
  type: 'text',
  text: { body: 'I will check your order now' },
};

describe('WhatsApp: messages the business sent from the WhatsApp Business app (smb_message_echoes)', () => {
  it('reports each as a message our account sent, by a person, in the session of the customer it went to', () => {
    const whatsapp = channelOf('whatsapp');
    const [message] = normalizedFixture(whatsapp, 'whatsapp', 'text.json').events;
    expect(normalizedBody(whatsapp, echoes([typed]))).toEqual({
      events: [],
      ignored: 1,
      sent: [
        {
          namespace: 'wa',
          messageId: 'wamid.HBgLECHO1',
          botId: '1065',
          content: 'I will check your order now',
          sessionKey: message!.sessionKey,
          byHuman: true,
        },
      ],
    });
  });

  it('keys a customer given as a number with + as the wa_id its messages carry', () => {
    const whatsapp = channelOf('whatsapp');
    const [message] = normalizedFixture(whatsapp, 'whatsapp', 'text.json').events;
    const { sent } = normalizedBody(whatsapp, echoes([{ ...typed, to: '+16505551234' }]));
    expect(sent![0]!.sessionKey).toBe(message!.sessionKey);
  });

  it('reads a media echo by its caption, and reports one entry per echo', () => {
    const image = { ...typed, id: 'wamid.HBgLECHO2', type: 'image', image: { id: 'MEDIA9', caption: 'the label' } };
    delete (image as Record<string, unknown>).text;
    const { sent, events } = normalizedBody(channelOf('whatsapp'), echoes([typed, image]));
    expect(events).toEqual([]);
    expect(sent!.map((entry) => [entry.messageId, entry.content])).toEqual([
      ['wamid.HBgLECHO1', 'I will check your order now'],
      ['wamid.HBgLECHO2', 'the label'],
    ]);
  });

  it('reports nothing sent for a delivery of customer messages', () => {
    expect(normalizedFixture(channelOf('whatsapp'), 'whatsapp', 'text.json').sent).toBeUndefined();
  });
});
