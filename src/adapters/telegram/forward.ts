import { own, type Json, type PayloadReader } from '../kit/shape.js';

/** The field of a MessageOrigin that holds its party, by its type (`hidden_user` holds only a name). */
const partyKeys = new Map([
  ['user', 'sender_user'],
  ['chat', 'sender_chat'],
  ['channel', 'chat'],
]);

/**
 * A forwarded message's origin, into `fields`: `forwarded: "true"`, and where Telegram tells
 * them the original author (`forward_sender_id`, `forward_sender_name`) and when the original
 * was sent (`forward_date`, seconds, as every timestamp here). Bot API 7.0 gives `forward_origin` (MessageOrigin: `user` with
 * `sender_user`, `hidden_user` with `sender_user_name`, `chat` with `sender_chat`, `channel`
 * with `chat`; each with `date`, core.telegram.org/bots/api#messageorigin); older payloads give
 * `forward_from`, `forward_from_chat`, `forward_sender_name` and `forward_date`.
 */
export function forwardedIn(
  read: PayloadReader,
  message: Json,
  at: string,
  fields: Record<string, string>,
  nameOf: (read: PayloadReader, party: Json, at: string) => string | undefined,
): void {
  const origin = read.optObject(own(message, 'forward_origin'), `${at}.forward_origin`);
  const where = origin ? `${at}.forward_origin` : at;
  // A Map, not an object literal: a type such as "constructor" must not find an inherited member.
  const key = origin
    ? partyKeys.get(String(own(origin, 'type')))
    : ['forward_from', 'forward_from_chat'].find((name) => own(message, name) !== undefined);
  const source = origin ?? message;
  const party = key === undefined ? undefined : read.optObject(own(source, key), `${where}.${key}`);
  const hiddenName = read.optText(
    own(source, origin ? 'sender_user_name' : 'forward_sender_name'),
    `${where}.${origin ? 'sender_user_name' : 'forward_sender_name'}`,
  );
  const date = origin ? own(origin, 'date') : own(message, 'forward_date');
  if (!origin && !party && hiddenName === undefined && date === undefined) return;
  fields.forwarded = 'true';
  const id = party && read.optText(own(party, 'id'), `${where}.${key}.id`);
  if (id) fields.forward_sender_id = id;
  const name = (party && nameOf(read, party, `${where}.${key}`)) ?? hiddenName;
  if (name) fields.forward_sender_name = name;
  if (typeof date === 'number' && Number.isSafeInteger(date)) fields.forward_date = String(date);
}
