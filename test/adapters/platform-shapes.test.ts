import { describe, expect, it } from 'vitest';
import { adapters } from '../../src/adapters/index.js';
import type { Adapter } from '../../src/adapters/kit/types.js';
import { fixture } from '../fixtures/index.js';
import { adapterOf, delivery, fixturesOf } from './suite.js';

/** The unsigned channel `ch` of a registered adapter, with its fixtures' settings. */
function adapterFor(name: string): Adapter {
  const descriptor = adapters.find((candidate) => candidate.name === name);
  if (!descriptor) throw new Error(`no adapter "${name}" in the registry`);
  return adapterOf(descriptor, adapters, fixturesOf(descriptor), { verify: false });
}

/** The refusal of `body`, as status, code and message. */
function refusal(adapter: Adapter, body: unknown): { status: number; code: string; message: string } {
  try {
    adapter.normalize(body, delivery);
  } catch (error) {
    const { status, code, message } = error as { status: number; code: string; message: string };
    return { status, code, message };
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
}

/** A fixture with one change applied. */
function edit(platform: string, name: string, change: (body: any) => void): unknown {
  const body = fixture(platform, name);
  change(body);
  return body;
}

describe('malformed platform payloads are a 400 naming the field and what is allowed', () => {
  const whatsapp = adapterFor('whatsapp');
  const telegram = adapterFor('telegram');
  const slack = adapterFor('slack');
  const line = adapterFor('line');
  const onebot = adapterFor('onebot');
  const qqbot = adapterFor('qqbot');

  it.each(
    (
      [
        [
          whatsapp,
          edit('whatsapp', 'text.json', (b) => {
            b.entry[0].changes = 0;
          }),
          'a WhatsApp webhook: entry[0].changes must be an array, got the number 0',
        ],
        [
          whatsapp,
          edit('whatsapp', 'text.json', (b) => {
            b.entry[0].changes[0].value.messages[0] = null;
          }),
          'entry[0].changes[0].value.messages[0] must be an object, got null',
        ],
        [
          whatsapp,
          edit('whatsapp', 'text.json', (b) => {
            delete b.entry[0].changes[0].value.messages[0].from;
          }),
          'entry[0].changes[0].value.messages[0].from is required (a non-empty string)',
        ],
        [
          whatsapp,
          edit('whatsapp', 'image.json', (b) => {
            b.entry[0].changes[0].value.messages[0].image = 'MEDIA123';
          }),
          'entry[0].changes[0].value.messages[0].image must be an object, got a string',
        ],
        [
          telegram,
          edit('telegram', 'text.json', (b) => {
            b.message.photo = [null];
          }),
          'a Telegram update: message.photo[0] must be a PhotoSize object {file_id, width, height}, got null',
        ],
        [
          telegram,
          edit('telegram', 'text.json', (b) => {
            b.message.from = 'bob';
          }),
          'message.from must be an object, got a string',
        ],
        [
          telegram,
          edit('telegram', 'text.json', (b) => {
            b.update_id = '10000';
          }),
          'update_id must be a whole number, got a string',
        ],
        [
          slack,
          edit('slack', 'file.json', (b) => {
            b.event = null;
          }),
          'a Slack event: event must be an event object {type, ...}, got null',
        ],
        [
          slack,
          edit('slack', 'file.json', (b) => {
            b.event.files = { url_private_download: 'x' };
          }),
          'event.files must be an array, got an object',
        ],
        [
          slack,
          edit('slack', 'file.json', (b) => {
            b.event.ts = { value: 1 };
          }),
          'event.ts must be a string, got an object',
        ],
        [
          line,
          edit('line', 'message.json', (b) => {
            b.events = {};
          }),
          'a LINE webhook: events must be an array, got an object',
        ],
        [
          line,
          edit('line', 'message.json', (b) => {
            b.events[0].source = 'U4af';
          }),
          'events[0].source must be an object, got a string',
        ],
        [
          onebot,
          { post_type: 'message', message_type: 'group', group_id: 1, user_id: {} },
          'a OneBot v11 event: user_id must be a number or string, got an object',
        ],
        [onebot, { post_type: {} }, 'post_type must be a string, got an object'],
        [
          qqbot,
          edit('qqbot', 'guild-at.json', (b) => {
            b.d.attachments = [null];
          }),
          'a QQ bot webhook: d.attachments[0] must be an attachment {content_type, filename, url, size, ...}, got null',
        ],
        [
          qqbot,
          edit('qqbot', 'c2c.json', (b) => {
            b.d.author = 'E4F4';
          }),
          'd.author must be an object {user_openid | member_openid | id, ...}, got a string',
        ],
        [
          qqbot,
          edit('qqbot', 'c2c.json', (b) => {
            b.op = '0';
          }),
          'op must be 0 (dispatch), 1 (heartbeat) or 13 (callback URL validation), got a string',
        ],
      ] as Array<[Adapter, unknown, string]>
    ).map(([adapter, body, message]) => [message, adapter, body] as const),
  )('says: %s', (message, adapter, body) => {
    const error = refusal(adapter, body);
    expect(error).toMatchObject({ status: 400, code: 'bad_shape' });
    expect(error.message).toMatch(/^Body of channel "ch" is not /);
    expect(error.message).toContain(message);
  });

  it('refuses timestamps outside 1970..3000 and milliseconds where seconds belong, naming the field', () => {
    expect(
      refusal(
        whatsapp,
        edit('whatsapp', 'text.json', (b) => {
          b.entry[0].changes[0].value.messages[0].timestamp = '1749416383000';
        }),
      ).message,
    ).toContain(
      'entry[0].changes[0].value.messages[0].timestamp must be seconds since 1970 before the year 3000, got 1749416383000 (milliseconds where seconds belong?)',
    );
    expect(
      refusal(
        telegram,
        edit('telegram', 'text.json', (b) => {
          b.message.date = -5;
        }),
      ).message,
    ).toContain('message.date must be seconds since 1970 before the year 3000, got -5');
    expect(
      refusal(
        telegram,
        edit('telegram', 'text.json', (b) => {
          b.message.date = Number.POSITIVE_INFINITY;
        }),
      ).message,
    ).toContain('message.date must be a number, got a non-finite number');
    expect(
      refusal(
        slack,
        edit('slack', 'file.json', (b) => {
          b.event.ts = '99999999999999.000100';
        }),
      ).message,
    ).toContain('event.ts must be seconds since 1970 before the year 3000');
    expect(refusal(onebot, { ...fixture('onebot', 'private-vector.json'), time: 1718000000000 }).message).toContain(
      'time must be seconds since 1970 before the year 3000, got 1718000000000',
    );
    // LINE stamps milliseconds: those are converted, and seconds there are refused as absurdly old only when negative.
    expect(line.normalize(fixture('line', 'message.json'), delivery).events[0]!.timestamp).toBe(1692251666);
    expect(
      refusal(
        line,
        edit('line', 'message.json', (b) => {
          b.events[0].timestamp = 32503680000 * 1000;
        }),
      ).message,
    ).toContain('events[0].timestamp must be milliseconds since 1970 before the year 3000');
  });

  it('takes a missing timestamp as the receive time', () => {
    const body = edit('telegram', 'text.json', (b) => {
      delete b.message.date;
    });
    expect(telegram.normalize(body, delivery).events[0]!.timestamp).toBe(1_718_000_000);
  });
});

describe('type names that are Object.prototype keys', () => {
  it('are unsupported WhatsApp types, not a lookup of a function', () => {
    for (const type of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const body = edit('whatsapp', 'text.json', (b) => {
        b.entry[0].changes[0].value.messages[0].type = type;
      });
      const [event] = adapterFor('whatsapp').normalize(body, delivery).events;
      expect(event!.media).toEqual([]);
      expect(event!.text).toBe(`[unsupported WhatsApp message type "${type}"]`);
    }
  });

  it('are ignored LINE message types, never media', () => {
    for (const type of ['constructor', '__proto__', 'toString', 'valueOf']) {
      const body = edit('line', 'message.json', (b) => {
        b.events[0].message.type = type;
      });
      const [event] = adapterFor('line').normalize(body, delivery).events;
      expect(event!.media).toEqual([]);
      expect(event!.text).toBe('');
    }
    const notice = edit('line', 'message.json', (b) => {
      b.events[0].type = 'constructor';
    });
    expect(adapterFor('line').normalize(notice, delivery)).toMatchObject({ events: [], ignored: 1 });
  });
});
