import { describe, expect, it } from 'vitest';
import { matrixRefusal, transactionOf } from '../../../src/adapters/matrix/descriptor.js';
import type { RawDelivery } from '../../../src/adapters/kit/types.js';
import { IntakeError, RequestError } from '../../../src/core/errors.js';
import { channelOf, normalizedBody, normalizedFixture, NOW } from '../normalized.js';

const delivery = (headers: Record<string, string>, query = '', path?: string): RawDelivery => ({
  headers,
  body: Buffer.from('{"events":[]}'),
  query: new URLSearchParams(query),
  now: NOW,
  ...(path === undefined ? {} : { path }),
});

describe('Matrix application service adapter', () => {
  it('reads a text message with an m.mentions of the bot into the room group session', () => {
    const [event, ...rest] = normalizedFixture(channelOf('matrix'), 'matrix', 'text-mention.json').events;
    expect(rest).toEqual([]);
    expect(event).toMatchObject({
      kind: 'message',
      detail: 'm.text',
      sessionKey: 'matrix:group:!room:example.org',
      conversation: { type: 'group', id: '!room:example.org' },
      sender: { id: '@alice:example.org' },
      botId: '@bot:example.org',
      platformId: '$text1',
      text: 'bot: what is on today?',
      mentions: ['@bot:example.org'],
      timestamp: 1718000000,
      fields: { room_id: '!room:example.org', event_id: '$text1' },
    });
  });

  it('takes the bot as mentioned when only a matrix.to pill names it (older clients)', () => {
    const body = {
      events: [
        {
          type: 'm.room.message',
          room_id: '!r:hs',
          sender: '@a:hs',
          event_id: '$p',
          origin_server_ts: 1718000000000,
          content: {
            msgtype: 'm.text',
            body: 'bot: hi',
            formatted_body: '<a href="https://matrix.to/#/@bot:example.org">bot</a>: hi',
          },
        },
      ],
    };
    expect(normalizedBody(channelOf('matrix'), body).events[0]!.mentions).toEqual(['@bot:example.org']);
    // With m.mentions present, it alone says who is mentioned.
    body.events[0]!.content = { ...body.events[0]!.content, 'm.mentions': {} } as (typeof body.events)[0]['content'];
    expect(normalizedBody(channelOf('matrix'), body).events[0]!.mentions).toEqual([]);
  });

  it('makes an m.image an mxc:// media reference, its body a caption when a filename differs', () => {
    const [event] = normalizedFixture(channelOf('matrix'), 'matrix', 'image.json').events;
    expect(event).toMatchObject({
      text: 'the whiteboard',
      media: [
        { ref: 'mxc://example.org/AbCdEf', type: 'image', mimeType: 'image/png', size: 68, fileName: 'board.png' },
      ],
    });
  });

  it('strips the legacy reply fallback and names the replied event', () => {
    const [event] = normalizedFixture(channelOf('matrix'), 'matrix', 'reply.json').events;
    expect(event).toMatchObject({
      text: 'the standup at ten',
      fields: { reply_to: '$text1', reply_to_text: 'what is on today?', reply_to_sender: '@alice:example.org' },
    });
  });

  it('marks a reply whose fallback quotes the bot as a reply to the bot, and takes no mention from the quoted pill', () => {
    const body = {
      events: [
        {
          type: 'm.room.message',
          room_id: '!r:hs',
          sender: '@a:hs',
          event_id: '$q',
          origin_server_ts: 1718000000000,
          content: {
            msgtype: 'm.text',
            body: '> <@bot:example.org> the standup is at ten\n\nthanks',
            format: 'org.matrix.custom.html',
            formatted_body:
              '<mx-reply><blockquote><a href="https://matrix.to/#/!r:hs/$s">In reply to</a> <a href="https://matrix.to/#/@bot:example.org">@bot:example.org</a><br>the standup is at ten</blockquote></mx-reply>thanks',
            'm.relates_to': { 'm.in_reply_to': { event_id: '$s' } },
          },
        },
      ],
    };
    const matrix = channelOf('matrix');
    const [event] = normalizedBody(matrix, body).events;
    expect(event).toMatchObject({ text: 'thanks', mentions: [] });
    expect(event!.fields).toMatchObject({ reply_to: '$s', reply_to_sender: '@bot:example.org', reply_to_bot: 'true' });
    const target = { ids: event!.fields!, conversation: event!.conversation, sender: event!.sender, receivedAt: 0 };
    expect(matrix.replyTo!(target)).toMatchObject({
      params: { room_id: '!r:hs' },
      messageId: '$q',
      quote: { messageId: '$s', fromBot: true },
    });
  });

  it('makes an m.replace an edit revising the event it names, with m.new_content as its text', () => {
    const [event] = normalizedFixture(channelOf('matrix'), 'matrix', 'edit.json').events;
    expect(event).toMatchObject({
      kind: 'message',
      subType: 'edited',
      platformId: '$edit1',
      text: '(edited) the standup is at eleven',
      fields: { edited_text: 'the standup is at eleven' },
      revises: { kind: 'edit', messageId: '$unknown0', senderId: '@dave:example.org' },
    });
  });

  it('makes a redaction a recall of the redacted event, reading redacts at the top level or in the content (room v11)', () => {
    const [top] = normalizedFixture(channelOf('matrix'), 'matrix', 'redaction.json').events;
    expect(top).toMatchObject({
      kind: 'notice',
      detail: 'redaction',
      revises: { kind: 'recall', messageId: '$gone0' },
    });
    const v11 = {
      events: [
        {
          type: 'm.room.redaction',
          room_id: '!r:hs',
          sender: '@a:hs',
          event_id: '$r',
          origin_server_ts: 1718000000000,
          content: { redacts: '$x' },
        },
      ],
    };
    expect(normalizedBody(channelOf('matrix'), v11).events[0]!.revises).toEqual({ kind: 'recall', messageId: '$x' });
  });

  it('tells a membership change as a notice and ignores other events; m.typing gives a signal per typer but our bot', () => {
    const [member] = normalizedFixture(channelOf('matrix'), 'matrix', 'member.json').events;
    expect(member).toMatchObject({ kind: 'notice', detail: 'member', subType: 'join' });
    const typing = normalizedFixture(channelOf('matrix'), 'matrix', 'typing.json');
    expect(typing.events.map((event) => [event.platformId, event.detail, event.text])).toEqual([
      ['$emote1', 'm.emote', 'waves'],
    ]);
    expect(typing.ignored).toBe(1);
    expect(typing.typing).toEqual([{ sessionKey: 'matrix:group:!room:example.org', senderId: '@gina:example.org' }]);
    expect(typing.reply).toEqual({ status: 200, body: {} });
  });

  it('refuses a body with no events array as 400 bad_shape', () => {
    expect(() => normalizedBody(channelOf('matrix'), { ephemeral: [] })).toThrow(
      'Body of channel "ch" is not a Matrix transaction: events is required (an array)',
    );
  });

  it('checks the hs_token in the Authorization header or the legacy query, both matching when both are sent', () => {
    const matrix = channelOf('matrix', { verify: true, hsToken: 'hs' });
    expect(() => matrix.verify(delivery({ authorization: 'Bearer hs' }))).not.toThrow();
    expect(() => matrix.verify(delivery({}, 'access_token=hs'))).not.toThrow();
    const refused = (d: RawDelivery) => {
      try {
        matrix.verify(d);
      } catch (error) {
        return [(error as IntakeError).status, (error as IntakeError).code];
      }
      return undefined;
    };
    expect(refused(delivery({}))).toEqual([401, 'token_missing']);
    expect(refused(delivery({ authorization: 'Bearer nope' }))).toEqual([403, 'token_mismatch']);
    expect(refused(delivery({ authorization: 'Bearer hs' }, 'access_token=other'))).toEqual([403, 'token_mismatch']);
  });

  it('takes the txnId from the transaction path, current or legacy, as the delivery id', () => {
    expect(transactionOf(delivery({}, '', '/_matrix/app/v1/transactions/42%2Fx'))).toBe('42/x');
    expect(transactionOf(delivery({}, '', '/transactions/7'))).toBe('7');
    expect(transactionOf(delivery({}, '', '/_matrix/app/v1/transactions/'))).toBeUndefined();
    expect(transactionOf(delivery({}))).toBeUndefined();
  });

  it('answers refusals the Matrix way, {errcode, error}', () => {
    expect(matrixRefusal(new IntakeError('token_mismatch', 403, 'no'))).toEqual({
      status: 403,
      body: { errcode: 'M_FORBIDDEN', error: 'no' },
    });
    expect(matrixRefusal(new RequestError('bad_json', 400, 'x')).body).toMatchObject({ errcode: 'M_NOT_JSON' });
    expect(matrixRefusal(new RequestError('bad_shape', 400, 'x')).body).toMatchObject({ errcode: 'M_BAD_JSON' });
  });

  it('resolves an mxc:// URI to the authenticated media download with the as_token', async () => {
    const matrix = channelOf('matrix', { homeserverUrl: 'https://hs.example.org/' });
    await expect(matrix.resolveMedia!({ ref: 'mxc://example.org/AbC' }, new AbortController().signal)).resolves.toEqual(
      {
        url: 'https://hs.example.org/_matrix/client/v1/media/download/example.org/AbC',
        headers: { authorization: 'Bearer as-token' },
      },
    );
    await expect(matrix.resolveMedia!({ ref: 'https://elsewhere/x' }, new AbortController().signal)).rejects.toThrow(
      /mxc:/,
    );
  });
});
