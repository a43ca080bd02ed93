import { own, type Json, type PayloadReader } from '../kit/shape.js';

/** What a `message_changed` or `message_deleted` event says of the message it is about. */
export type SlackRevision =
  | { kind: 'edit'; ts: string; senderId: string; message: Json }
  | { kind: 'recall'; ts: string; senderId: string | undefined };

/**
 * A user's message edited or deleted (docs.slack.dev/reference/events/message/message_changed,
 * …/message_deleted): `message_changed` carries the new `message` and the `previous_message`,
 * `message_deleted` the `deleted_ts` and the `previous_message`. Undefined for what is no
 * person's edit or deletion, counted as ignored as before: a bot's message (ours included), a
 * change Slack makes itself (a link unfurled, a thread's reply count, a deleted thread parent
 * left as a `tombstone`), which it does not mark `edited` or which leaves the text as it was.
 */
export function slackRevision(
  read: PayloadReader,
  event: Json,
  ourBot: string | undefined,
  userSubtypes: ReadonlySet<string | undefined>,
): SlackRevision | undefined {
  const previous = read.optObject(own(event, 'previous_message'), 'event.previous_message');
  const byPerson = (message: Json, at: string): string | undefined => {
    const user = read.optText(own(message, 'user'), `${at}.user`);
    if (own(message, 'bot_id') || !userSubtypes.has(own(message, 'subtype') as string | undefined)) return undefined;
    return user && user !== ourBot ? user : undefined;
  };
  if (own(event, 'subtype') === 'message_deleted') {
    const ts = read.text(own(event, 'deleted_ts'), 'event.deleted_ts');
    if (!previous) return { kind: 'recall', ts, senderId: undefined };
    const senderId = byPerson(previous, 'event.previous_message');
    return senderId ? { kind: 'recall', ts, senderId } : undefined;
  }
  const message = read.object(own(event, 'message'), 'event.message', 'the message as edited {user, text, ts, ...}');
  const senderId = byPerson(message, 'event.message');
  if (!senderId || read.optObject(own(message, 'edited'), 'event.message.edited') === undefined) return undefined;
  const text = read.optText(own(message, 'text'), 'event.message.text') ?? '';
  if (previous && (read.optText(own(previous, 'text'), 'event.previous_message.text') ?? '') === text) return undefined;
  return { kind: 'edit', ts: read.text(own(message, 'ts'), 'event.message.ts'), senderId, message };
}
