import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

const guild = fixture('discord', 'guild-message.json').d;
const dm = fixture('discord', 'dm-attachment.json').d;

/** MESSAGE_UPDATE of guild-message.json's message, as the current API sends it: the whole message, edited. */
const update = (changes: Record<string, unknown>) => ({
  op: 0,
  s: 7,
  t: 'MESSAGE_UPDATE',
  d: {
    ...guild,
    content: 'status of ORD-124?',
    mentions: [],
    edited_timestamp: '2026-12-04T03:31:00.000000+00:00',
    ...changes,
  },
});

describe('Discord: deletions and edits name the message they revise', () => {
  it('makes a MESSAGE_DELETE a notice revising the message by its platform id, in its session, with no sender', () => {
    const discord = channelOf('discord');
    const [message] = normalizedFixture(discord, 'discord', 'guild-message.json').events;
    const [notice, ...rest] = normalizedBody(discord, {
      op: 0,
      s: 8,
      t: 'MESSAGE_DELETE',
      d: { id: guild.id, channel_id: guild.channel_id, guild_id: guild.guild_id },
    }).events;
    expect(rest).toEqual([]);
    expect(notice).toMatchObject({
      kind: 'notice',
      detail: 'message_delete',
      text: '',
      segments: [],
      fields: { message_id: guild.id, channel_id: guild.channel_id, guild_id: guild.guild_id },
    });
    expect(notice!.revises).toEqual({ kind: 'recall', messageId: message!.platformId });
    expect(notice!.sessionKey).toBe(message!.sessionKey);
    expect(notice!.platformId).not.toBe(message!.platformId);
  });

  it('keys a deletion in a DM (no guild_id) as the DM', () => {
    const discord = channelOf('discord');
    const [message] = normalizedFixture(discord, 'discord', 'dm-attachment.json').events;
    const [notice] = normalizedBody(discord, {
      op: 0,
      s: 9,
      t: 'MESSAGE_DELETE',
      d: { id: dm.id, channel_id: dm.channel_id },
    }).events;
    expect(notice!.revises).toEqual({ kind: 'recall', messageId: message!.platformId });
    expect(notice!.sessionKey).toBe(message!.sessionKey);
  });

  it('makes a MESSAGE_DELETE_BULK one recall per id, in order', () => {
    const discord = channelOf('discord');
    const [message] = normalizedFixture(discord, 'discord', 'guild-message.json').events;
    const ids = [guild.id, '1180000000000000009'];
    const { events } = normalizedBody(discord, {
      op: 0,
      s: 10,
      t: 'MESSAGE_DELETE_BULK',
      d: { ids, channel_id: guild.channel_id, guild_id: guild.guild_id },
    });
    expect(events.map((event) => event.revises)).toEqual(ids.map((messageId) => ({ kind: 'recall', messageId })));
    expect(events.map((event) => event.detail)).toEqual(['message_delete_bulk', 'message_delete_bulk']);
    expect(new Set(events.map((event) => event.sessionKey))).toEqual(new Set([message!.sessionKey]));
    expect(new Set(events.map((event) => event.platformId)).size).toBe(2);
  });

  it('makes an edit a message revising the message, sender its author, marked as an edit with its new text', () => {
    const discord = channelOf('discord');
    const [message] = normalizedFixture(discord, 'discord', 'guild-message.json').events;
    const [edit] = normalizedBody(discord, update({})).events;
    expect(edit).toMatchObject({
      kind: 'message',
      subType: 'edited',
      sender: { id: guild.author.id, name: 'Ana' },
      text: '(edited) status of ORD-124?',
      fields: { message_id: guild.id, channel_id: guild.channel_id, edited_text: 'status of ORD-124?' },
      timestamp: Date.parse('2026-12-04T03:31:00Z') / 1000,
    });
    expect(edit!.revises).toEqual({ kind: 'edit', messageId: message!.platformId, senderId: guild.author.id });
    expect(edit!.sessionKey).toBe(message!.sessionKey);
    expect(edit!.platformId).not.toBe(message!.platformId);
  });

  it('gives two edits of one message two ids, and a replay of one edit the same', () => {
    const discord = channelOf('discord');
    const first = normalizedBody(discord, update({})).events[0]!.platformId;
    const again = normalizedBody(discord, update({})).events[0]!.platformId;
    const second = normalizedBody(discord, update({ edited_timestamp: '2026-12-04T03:32:00.000000+00:00' })).events[0]!
      .platformId;
    expect(again).toBe(first);
    expect(second).not.toBe(first);
  });

  it('ignores, as before, an update that is no edit: not edited (an embed unfurled), or partial (no content or author)', () => {
    const discord = channelOf('discord');
    const partial = {
      op: 0,
      s: 11,
      t: 'MESSAGE_UPDATE',
      d: { id: guild.id, channel_id: guild.channel_id, embeds: [] },
    };
    for (const body of [update({ edited_timestamp: null }), partial, update({ author: undefined })])
      expect(normalizedBody(discord, body)).toEqual({ events: [], ignored: 1 });
  });
});
