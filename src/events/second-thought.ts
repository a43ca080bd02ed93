import type { ContextMessage } from './context.js';
import type { ConversationType, InboundEvent } from './inbound.js';
import type { SecondThought } from './output.js';

/**
 * Second thoughts (contract §13) reach the outbox as the other outputs do: as an event admitted
 * to a buffer of its own, due at once, flushed and committed by whichever instance leases it.
 * The event's `platformId` is its once-key (the output and message it is about), so a second
 * bot's report of the same recall, or a retried delivery, is a duplicate claim and adds nothing.
 */

type SecondThoughtType = SecondThought['type'];
/** A second thought before the outbox gives it its seq. */
export type Unsequenced = SecondThought extends infer T ? (T extends SecondThought ? Omit<T, 'seq'> : never) : never;
const TYPES: ReadonlySet<string> = new Set<SecondThoughtType>(['chat.retracted', 'chat.edited', 'chat.takeover']);

/** Whether an event carries a second thought (its `detail` is the output type). */
export function isSecondThought(event: Pick<InboundEvent, 'kind' | 'detail'>): boolean {
  return event.kind === 'notice' && event.detail !== undefined && TYPES.has(event.detail);
}

/** Where a second thought belongs: the session and the channel it is told on. */
export interface SecondThoughtPlace {
  channel: string;
  adapter: string;
  namespace: string;
  sessionKey: string;
  conversation: { type: ConversationType; id: string };
}

/** What each second thought says, beside its place. */
export type SecondThoughtFields =
  | { type: 'chat.retracted'; outputId: string; messageId: string }
  | { type: 'chat.edited'; outputId: string; messageId: string; content: string; media: ContextMessage['media'] }
  | { type: 'chat.takeover'; active: boolean; until: number };

/** The event that carries a second thought through a buffer to the outbox; `onceKey` makes it once. */
export function secondThoughtEvent(
  place: SecondThoughtPlace,
  said: SecondThoughtFields,
  onceKey: string,
  now: number,
): InboundEvent {
  const fields: Record<string, string> =
    said.type === 'chat.takeover'
      ? { active: said.active ? 'true' : 'false', until: String(said.until) }
      : { output_id: said.outputId, message_id: said.messageId };
  if (said.type === 'chat.edited') {
    fields.content = said.content;
    fields.media = JSON.stringify(said.media);
  }
  return {
    id: onceKey,
    platformId: onceKey,
    kind: 'notice',
    detail: said.type,
    channel: place.channel,
    adapter: place.adapter,
    namespace: place.namespace,
    conversation: place.conversation,
    sessionKey: place.sessionKey,
    sender: { id: '' },
    segments: [],
    text: '',
    media: [],
    mentions: [],
    timestamp: Math.floor(now / 1000),
    fields,
    raw: undefined,
  };
}

/** The output of a second thought's event, without `seq`. */
export function secondThoughtOutput(id: string, event: InboundEvent): Unsequenced {
  const f = event.fields ?? {};
  const common = { id, schemaVersion: 1 as const, sessionKey: event.sessionKey };
  if (event.detail === 'chat.takeover') {
    return {
      type: 'chat.takeover',
      ...common,
      active: f.active === 'true',
      until: Number(f.until),
      channel: event.channel,
      timestamp: event.timestamp,
    };
  }
  const about = { outputId: f.output_id ?? '', messageId: f.message_id ?? '' };
  if (event.detail === 'chat.edited') {
    return {
      type: 'chat.edited',
      ...common,
      ...about,
      content: f.content ?? '',
      media: JSON.parse(f.media ?? '[]') as ContextMessage['media'],
      channel: event.channel,
      timestamp: event.timestamp,
    };
  }
  return { type: 'chat.retracted', ...common, ...about, channel: event.channel, timestamp: event.timestamp };
}
