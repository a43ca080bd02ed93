import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

/** A Teams activity about message `id` of the personal chat: an edit, a soft delete, or typing. */
function about(type: 'messageUpdate' | 'messageDelete' | 'typing', id: string, extra: Record<string, unknown> = {}) {
  const message = fixture('teams', 'message-personal.json');
  const eventType =
    type === 'messageUpdate' ? 'editMessage' : type === 'messageDelete' ? 'softDeleteMessage' : undefined;
  return {
    ...message,
    type,
    id,
    timestamp: '2024-06-10T06:13:25.000Z',
    channelData: { ...message.channelData, ...(eventType ? { eventType } : {}) },
    ...extra,
  };
}

describe('Teams: edits, deletes and typing name the message and the session', () => {
  it('edits the message of the same activity id: an edited message revising it, the new text alone in fields', () => {
    const adapter = channelOf('teams');
    const [original] = normalizedFixture(adapter, 'teams', 'message-personal.json').events;
    const [edit] = normalizedBody(
      adapter,
      about('messageUpdate', original!.platformId!, { text: 'where is order 42?' }),
    ).events;
    expect(edit).toMatchObject({
      kind: 'message',
      subType: 'edited',
      sessionKey: original!.sessionKey,
      platformId: `${original!.platformId}:edited:2024-06-10T06:13:25.000Z`,
      text: '(edited) where is order 42?',
      fields: { edited_text: 'where is order 42?' },
      revises: { kind: 'edit', messageId: original!.platformId, senderId: original!.sender.id },
    });
  });

  it('recalls the message of the same activity id on a soft delete, as a notice in its session', () => {
    const adapter = channelOf('teams');
    const [original] = normalizedFixture(adapter, 'teams', 'message-personal.json').events;
    const [deletion] = normalizedBody(adapter, about('messageDelete', original!.platformId!)).events;
    expect(deletion).toMatchObject({
      kind: 'notice',
      detail: 'messageDelete',
      sessionKey: original!.sessionKey,
      platformId: `${original!.platformId}:deleted`,
      revises: { kind: 'recall', messageId: original!.platformId },
    });
  });

  it("is a typing signal for the sender's session, with no event", () => {
    const adapter = channelOf('teams');
    const [message] = normalizedFixture(adapter, 'teams', 'message-personal.json').events;
    expect(normalizedBody(adapter, about('typing', 'typing-1'))).toEqual({
      events: [],
      reply: { status: 200, body: {} },
      typing: [{ sessionKey: message!.sessionKey, senderId: message!.sender.id }],
    });
  });

  it('acknowledges an undelete and other activities without an event', () => {
    const adapter = channelOf('teams');
    const undelete = about('messageUpdate', '1', { channelData: { eventType: 'undeleteMessage' } });
    expect(normalizedBody(adapter, undelete)).toMatchObject({ events: [], ignored: 1 });
    expect(normalizedBody(adapter, { ...undelete, type: 'invoke' })).toMatchObject({ events: [], ignored: 1 });
  });
});

describe('Teams attachments', () => {
  it("are media by a file's downloadUrl and an image's contentUrl, never a card or the HTML copy of the text", () => {
    const message = fixture('teams', 'message-personal.json');
    message.attachments = [
      {
        contentType: 'application/vnd.microsoft.teams.file.download.info',
        name: 'invoice.pdf',
        contentUrl: 'https://contoso.sharepoint.com/personal/ada/Documents/invoice.pdf',
        content: { downloadUrl: 'https://contoso.sharepoint.com/download?token=abc', fileType: 'pdf' },
      },
      { contentType: 'image/png', contentUrl: 'https://smba.trafficmanager.net/emea/v3/attachments/x/views/original' },
      { contentType: 'application/vnd.microsoft.card.adaptive', content: { type: 'AdaptiveCard' } },
      { contentType: 'text/html', content: '<p>where is my order?</p>' },
    ];
    expect(normalizedBody(channelOf('teams'), message).events[0]!.media).toEqual([
      { url: 'https://contoso.sharepoint.com/download?token=abc', fileName: 'invoice.pdf' },
      {
        url: 'https://smba.trafficmanager.net/emea/v3/attachments/x/views/original',
        mimeType: 'image/png',
        type: 'image',
      },
    ]);
  });
});
