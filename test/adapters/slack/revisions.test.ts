import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

/** An Events API payload around `event`, as message.json has it. */
const payload = (event: Record<string, unknown>, eventId: string) => ({
  token: 'x',
  team_id: 'T1',
  api_app_id: 'A1',
  type: 'event_callback',
  event_id: eventId,
  event_time: 1700000400,
  authorizations: [{ team_id: 'T1', user_id: 'UBOT', is_bot: true }],
  event,
});

const original = fixture('slack', 'message.json').event;

/** message_changed of message.json's message (docs.slack.dev/reference/events/message/message_changed). */
const changed = (text: string, extra: Record<string, unknown> = {}) =>
  payload(
    {
      type: 'message',
      subtype: 'message_changed',
      hidden: true,
      channel: 'C1',
      channel_type: 'channel',
      ts: '1700000400.000500',
      event_ts: '1700000400.000500',
      message: {
        type: 'message',
        user: 'U1',
        text,
        ts: original.ts,
        client_msg_id: original.client_msg_id,
        edited: { user: 'U1', ts: '1700000400.000000' },
        ...extra,
      },
      previous_message: { type: 'message', user: 'U1', text: original.text, ts: original.ts },
    },
    'Ev12',
  );

/** message_deleted of message.json's message (docs.slack.dev/reference/events/message/message_deleted). */
const deleted = (previous: Record<string, unknown> | undefined) =>
  payload(
    {
      type: 'message',
      subtype: 'message_deleted',
      hidden: true,
      channel: 'C1',
      channel_type: 'channel',
      ts: '1700000500.000600',
      deleted_ts: original.ts,
      event_ts: '1700000500.000600',
      ...(previous ? { previous_message: previous } : {}),
    },
    'Ev13',
  );

describe('Slack: edits and deletions name the message they revise', () => {
  it('makes an edit a message revising the edited message by its platform id, in its session, marked as an edit', () => {
    const slack = channelOf('slack');
    const [message] = normalizedFixture(slack, 'slack', 'message.json').events;
    const [edit] = normalizedBody(slack, changed('<@UBOT> deploy now')).events;
    expect(edit).toMatchObject({
      kind: 'message',
      detail: 'group',
      subType: 'edited',
      sender: { id: 'U1' },
      text: '(edited) @UBOT deploy now',
      mentions: ['UBOT'],
      fields: { ts: original.ts, team: 'T1', edited_text: '@UBOT deploy now' },
      timestamp: 1700000400,
    });
    expect(edit!.revises).toEqual({ kind: 'edit', messageId: message!.platformId, senderId: 'U1' });
    expect(edit!.sessionKey).toBe(message!.sessionKey);
  });

  it("gives an edit an id of its own and not the message's client_msg_id, so it is no duplicate of the message", () => {
    const slack = channelOf('slack');
    const [message] = normalizedFixture(slack, 'slack', 'message.json').events;
    const [edit] = normalizedBody(slack, changed('deploy now')).events;
    expect(edit!.platformId).not.toBe(message!.platformId);
    expect(edit!.clientMessageId).toBeUndefined();
    expect(edit!.id).toBe('Ev12');
  });

  it("makes a deletion a notice revising the deleted message, its sender the deleted message's", () => {
    const slack = channelOf('slack');
    const [message] = normalizedFixture(slack, 'slack', 'message.json').events;
    const result = normalizedBody(slack, deleted({ type: 'message', user: 'U1', text: 'hi', ts: original.ts }));
    const [notice] = result.events;
    expect(notice).toMatchObject({
      kind: 'notice',
      detail: 'message_deleted',
      sender: { id: 'U1' },
      text: '',
      segments: [],
      fields: { deleted_ts: original.ts, team: 'T1' },
      platformId: 'C1:1700000500.000600',
    });
    expect(notice!.revises).toEqual({ kind: 'recall', messageId: message!.platformId, senderId: 'U1' });
    expect(notice!.sessionKey).toBe(message!.sessionKey);
  });

  it('names no sender for a deletion that carries no previous_message', () => {
    const [notice] = normalizedBody(channelOf('slack'), deleted(undefined)).events;
    expect(notice!.revises).toEqual({ kind: 'recall', messageId: `C1:${original.ts}` });
    expect(notice!.sender).toEqual({ id: 'unknown' });
  });

  it('keys an edit in a DM as the DM', () => {
    const slack = channelOf('slack');
    const [message] = normalizedFixture(slack, 'slack', 'dm.json').events;
    const body = changed('again');
    Object.assign(body.event, { channel: message!.conversation.id, channel_type: 'im' });
    Object.assign(body.event.message as object, { ts: message!.fields!.ts, user: message!.sender.id });
    const [edit] = normalizedBody(slack, body).events;
    expect(edit!.sessionKey).toBe(message!.sessionKey);
    expect(edit!.revises!.messageId).toBe(message!.platformId);
  });

  it('ignores, as before, what no person edited or deleted: a bot, our bot, an unfurl, an unchanged text, a tombstone', () => {
    const slack = channelOf('slack');
    const ignored = [
      changed('x', { user: 'UBOT' }),
      changed('x', { bot_id: 'B1' }),
      changed('x', { subtype: 'tombstone' }),
      changed('x', { edited: undefined }),
      changed(original.text),
      deleted({ type: 'message', user: 'UBOT', text: 'mine', ts: original.ts }),
      deleted({ type: 'message', subtype: 'bot_message', bot_id: 'B1', text: 'theirs', ts: original.ts }),
      fixture('slack', 'changed.json'),
    ];
    for (const body of ignored) expect(normalizedBody(slack, body)).toEqual({ events: [], ignored: 1 });
  });
});
