import type { SocketFrame } from '../../events/connection.js';
import type { EventParts } from '../kit/event.js';
import { own, type Json } from '../kit/shape.js';
import { str } from './message.js';

/** The event fields kept of a notice or request (ids, counters, a comment), as OneBot's notices keep theirs. */
const NOTICE_FIELDS = [
  'group_id',
  'user_id',
  'operator_id',
  'initiator_id',
  'target_user_id',
  'sender_id',
  'peer_id',
  'message_scene',
  'message_seq',
  'notification_seq',
  'invitation_seq',
  'comment',
  'reason',
  'duration',
  'is_set',
  'is_filtered',
  'new_group_name',
  'file_id',
  'file_name',
];

/** What a notice or request gives the event builder; the caller adds time, bot and raw event. */
export type NoticeParts = Omit<EventParts, 'timestamp' | 'raw' | 'botId' | 'segments'>;

/** Requests ask the bot to decide (SaltifyDev/milky, `Event` of @saltify/milky-types); every other event is a notice. */
const REQUESTS = new Set(['friend_request', 'group_join_request', 'group_invited_join_request', 'group_invitation']);

/**
 * A notice or request of one Milky event: `message_recall` is a recall of the message it names
 * (`group_recall`/`friend_recall`, as OneBot names it, so the reports of both kinds of bot are one
 * notice), anything else keeps its `event_type`. Undefined for an event with no type.
 */
export function noticeOf(
  type: string,
  data: Json,
  selfId: string,
  platformIdOf: (scene: string, peer: string, seq: string) => string,
): NoticeParts | undefined {
  const fields: Record<string, string> = {};
  for (const key of NOTICE_FIELDS) {
    const value = own(data, key);
    const text = typeof value === 'boolean' ? String(value) : str(value);
    if (text !== undefined) fields[key] = text.slice(0, 500);
  }
  const scene = fields.message_scene;
  const peer = fields.peer_id;
  if (scene === 'group' && peer && fields.group_id === undefined) fields.group_id = peer;
  if (fields.user_id === undefined) {
    const who = fields.initiator_id ?? fields.sender_id;
    if (who !== undefined) fields.user_id = who;
  }
  const conversation = fields.group_id
    ? { type: 'group' as const, id: fields.group_id }
    : { type: 'private' as const, id: peer ?? fields.user_id ?? selfId };
  const sender = { id: fields.user_id ?? fields.operator_id ?? selfId };
  const text = fields.comment ?? '';

  if (type === 'message_recall') {
    const seq = fields.message_seq;
    const recalled = scene && peer && seq ? platformIdOf(scene, peer, seq) : undefined;
    return {
      kind: 'notice',
      detail: scene === 'group' ? 'group_recall' : 'friend_recall',
      conversation,
      sender,
      text,
      fields,
      ...(recalled
        ? {
            revises: fields.sender_id
              ? { kind: 'recall' as const, messageId: recalled, senderId: fields.sender_id }
              : { kind: 'recall' as const, messageId: recalled },
          }
        : {}),
    };
  }
  return { kind: REQUESTS.has(type) ? 'request' : 'notice', detail: type, conversation, sender, text, fields };
}

/** Where `self_id` is looked for: Milky servers write the envelope's fields before its `data`. */
const HEAD_BYTES = 1024;
/** `"self_id": 10001` at the envelope's level; inside a JSON string the quotes are escaped and never match. */
const SELF_ID = /"self_id"\s*:\s*"?(\d{1,20})/;

/**
 * A frame of the event socket: every frame is an event to record (Milky sends no heartbeats and
 * takes no actions on it), and the first one names the bot the connection is, as nothing else
 * on the socket does.
 */
export function milkyFrame(frame: Buffer): SocketFrame {
  const botId = SELF_ID.exec(frame.toString('latin1', 0, HEAD_BYTES))?.[1];
  return botId ? { kind: 'envelope', body: frame, botId } : { kind: 'envelope', body: frame };
}
