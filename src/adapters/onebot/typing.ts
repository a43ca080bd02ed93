import { sessionKeyOf } from '../../events/inbound.js';
import type { Normalized } from '../kit/types.js';

/**
 * NapCat's input status: `{"post_type": "notice", "notice_type": "notify", "sub_type":
 * "input_status", "user_id", "event_type", "status_text", "group_id": 0}`, pushed when a friend
 * types (`event_type` 1, "对方正在输入...") or speaks a voice message (0) in a private chat
 * (NapNeko/NapCatQQ `OB11InputStatusEvent`, emitted from the kernel's `onInputStatusPush`; the
 * states are those of its `set_input_status` action). Not an event: a typing signal that holds
 * the open buffer of that friend (contract §13); another state is ignored. Undefined for any
 * other body.
 */
export function inputStatusOf(event: Readonly<Record<string, unknown>>, namespace: string): Normalized | undefined {
  if (event.post_type !== 'notice' || event.notice_type !== 'notify' || event.sub_type !== 'input_status')
    return undefined;
  const userId = idOf(event.user_id);
  // Another state (one a later QQ adds, or the end of typing) holds nothing.
  const state = Number(event.event_type);
  const typing = userId !== undefined && (state === 0 || state === 1);
  if (!typing) return { events: [], ignored: 1, reply: { status: 204 } };
  return {
    events: [],
    reply: { status: 204 },
    typing: [{ sessionKey: sessionKeyOf(namespace, { type: 'private', id: userId }), senderId: userId }],
  };
}

/** A QQ number as OneBot sends it (a number, or a string of digits); 0 is none. */
function idOf(value: unknown): string | undefined {
  const id = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  return typeof id === 'string' && /^[1-9]\d*$/.test(id) ? id : undefined;
}
