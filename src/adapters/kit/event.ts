import { nanoid } from 'nanoid';
import {
  sessionKeyOf,
  type ConversationType,
  type EventKind,
  type InboundEvent,
  type MediaRef,
  type Party,
  type RevisionRef,
  type Segment,
} from '../../events/inbound.js';

/** What an adapter knows of one event; everything else `buildEvent` fills in. */
export interface EventParts {
  kind: EventKind;
  /** @default `platformId`, else a generated `<idPrefix>_<nanoid>` */
  id?: string | undefined;
  detail?: string | undefined;
  subType?: string | undefined;
  botId?: string | undefined;
  conversation: { type: ConversationType; id: string };
  /** @default `<namespace>:<conversation>` */
  sessionKey?: string | undefined;
  sender: Party;
  platformId?: string | undefined;
  clientMessageId?: string | undefined;
  text: string;
  /** @default one text segment holding `text`, none when it is empty */
  segments?: Segment[] | undefined;
  /** @default [] */
  media?: MediaRef[] | undefined;
  /** @default [] */
  mentions?: string[] | undefined;
  timestamp: number;
  fields?: Record<string, string> | undefined;
  /** The earlier message a recall or an edit is about (contract §13). */
  revises?: RevisionRef | undefined;
  raw: unknown;
}

/** Resolved once per channel: what every event of the channel shares. */
export interface EventSource {
  channel: string;
  adapter: string;
  namespace: string;
  /** Prefix of generated ids (`gen`, `ob`), for events the platform gives no id. */
  idPrefix: string;
  /** @default 21 (nanoid's) */
  idLength?: number;
}

/**
 * The event builder of one channel. Every event is one whole literal with every field of
 * InboundEvent in one order, the optional ones `undefined` when absent: one hidden class for
 * all events of all adapters, and no field added afterwards into an out-of-object property
 * array that the trail and the debounce buffer keep alive. JSON and `toEqual` cannot tell an
 * undefined field from a missing one.
 */
export function eventBuilder(source: EventSource): (parts: EventParts) => InboundEvent {
  const { channel, adapter, namespace, idPrefix } = source;
  const idLength = source.idLength ?? 21;
  return function buildEvent(parts: EventParts): InboundEvent {
    const { text, conversation } = parts;
    return {
      id: parts.id ?? parts.platformId ?? `${idPrefix}_${nanoid(idLength)}`,
      kind: parts.kind,
      detail: parts.detail,
      subType: parts.subType,
      channel,
      adapter,
      namespace,
      botId: parts.botId,
      conversation,
      sessionKey: parts.sessionKey ?? sessionKeyOf(namespace, conversation),
      sender: parts.sender,
      platformId: parts.platformId,
      clientMessageId: parts.clientMessageId,
      segments: parts.segments ?? (text ? [{ type: 'text', data: { text } }] : []),
      text,
      media: parts.media ?? [],
      mentions: parts.mentions ?? [],
      timestamp: parts.timestamp,
      fields: parts.fields,
      revises: parts.revises,
      raw: parts.raw,
    };
  };
}
