/**
 * The normalized event model. Every adapter turns one platform delivery into zero or more
 * InboundEvents; every later stage reads only this shape, never the platform payload.
 */

export type EventKind = 'message' | 'notice' | 'request';
export type ConversationType = 'private' | 'group';
export type MediaType = 'image' | 'audio' | 'video' | 'document';
/** What addressed a message to our bots (contract §12): `always` when its conversation takes everything. */
export type Trigger = 'always' | 'mention' | 'reply' | 'wake' | 'pattern' | 'command';

/** One piece of message content, OneBot-style, so signatures can be taken per segment. */
export interface Segment {
  type:
    | 'text'
    | 'at'
    | 'face'
    | 'image'
    | 'flash'
    | 'record'
    | 'video'
    | 'file'
    | 'reply'
    | 'json'
    | 'xml'
    | 'ark'
    | 'other';
  /** Segment fields as strings (text, qq, id, file, url, md5, data, ...). */
  data: Record<string, string>;
}

/** An attachment as the platform announced it, before download. */
export interface MediaRef {
  /** A URL to fetch directly. */
  url?: string;
  /** A platform handle (WhatsApp media id, Telegram file_id, LINE message id) a resolver exchanges for a URL. */
  ref?: string;
  /** Declared MIME type, used when the bytes do not tell. */
  mimeType?: string;
  /** Coarse type the platform declared. */
  type?: MediaType;
  /** Declared size in bytes, for early refusal. */
  size?: number;
  /** Content hash the platform gave (md5 / sha1), used by the correlator. */
  hash?: string;
  fileName?: string;
}

export interface Party {
  id: string;
  name?: string;
}

export interface InboundEvent {
  /** Stable id of this delivery in responses: the platform id, or a generated one. */
  id: string;
  kind: EventKind;
  /** Notice or request type (`group_increase`, `friend`, `reaction`...); message sub-kind for messages. */
  detail?: string;
  subType?: string;
  /** Configured channel id (`wa`, `qq-a`, `generic`). */
  channel: string;
  /** Adapter name (`whatsapp`, `onebot`, `generic`), the output's `sourceChannel`. */
  adapter: string;
  /** Id space of users and conversations (`wa`, `qq`, channel id for generic). */
  namespace: string;
  /** The bot account that received it (OneBot self_id, WhatsApp phone_number_id...). */
  botId?: string;
  conversation: { type: ConversationType; id: string };
  /** Session key `<namespace>:<conversation>` (`qq:group:123`), or as given for generic. */
  sessionKey: string;
  sender: Party;
  /** Platform message / event id, when the platform gives one (exact dedup key). */
  platformId?: string;
  /**
   * The id the sender's client gave the message, when the platform passes it on (Slack's
   * `client_msg_id`): the same on a copy the platform delivers under another platform id, so
   * that copy is a duplicate too.
   */
  clientMessageId?: string;
  segments: Segment[];
  /** Plain-text rendering of the content, what the agent reads. */
  text: string;
  media: MediaRef[];
  /** Ids of accounts mentioned, in mention order. */
  mentions: string[];
  /** Seconds since the epoch, as the platform stamped it. */
  timestamp: number;
  /**
   * Whether the message addresses our bots by itself (a mention, a reply to a bot, a wake word, a
   * pattern, a command), marked as it arrives; an `intake.use` step may set it. A batch in
   * `mention` mode reaches the agent when one of its messages is addressed.
   */
  addressed?: boolean;
  /** What addressed it, when the built-in rules did. */
  trigger?: Trigger;
  /** Fields of notices and requests that identify them (group_id, user_id, operator_id, flag...). */
  fields?: Record<string, string>;
  /**
   * This event takes back or rewrites an earlier message of its session (contract §13): a
   * recall or deletion notice, or an edited message. Applied where that message is (its buffer,
   * its turn's held batch, the context, or an output already emitted); when the message is not
   * known, the event goes on as it is (a `chat.notice`, or a new message).
   */
  revises?: RevisionRef;
  /** The platform's own object for this event, untouched. */
  raw: unknown;
}

/** The message a recall or an edit is about. */
export interface RevisionRef {
  kind: 'recall' | 'edit';
  /** The id the message had as its own event's `platformId`. */
  messageId: string;
  /** Who sent that message, when the platform says (it names the buffer it may wait in). */
  senderId?: string;
}

/** A bot account, by the channel it is connected through. */
export interface BotRef {
  channel: string;
  botId?: string;
}

/** The bot that delivered an event. */
export function ownBot(event: Pick<InboundEvent, 'channel' | 'botId'>): BotRef {
  return event.botId === undefined ? { channel: event.channel } : { channel: event.channel, botId: event.botId };
}

/** Build a session key: `<namespace>:<id>` or `<namespace>:group:<id>`. */
export function sessionKeyOf(namespace: string, conversation: { type: ConversationType; id: string }): string {
  return conversation.type === 'group' ? `${namespace}:group:${conversation.id}` : `${namespace}:${conversation.id}`;
}

/** The coarse media type of a MIME type. */
export function mediaTypeOf(mimeType: string): MediaType {
  if (mimeType.startsWith('image/')) return 'image';
  if (mimeType.startsWith('audio/')) return 'audio';
  if (mimeType.startsWith('video/')) return 'video';
  return 'document';
}

/** One delivery of a logical event: which channel and bot, and that bot's own ids. */
export interface Delivery {
  channel: string;
  adapter: string;
  botId?: string;
  platformId?: string;
  /** Per-bot ids needed to act through this bot (message_id, request flag, ...). */
  ids: Record<string, string>;
  at: number;
}

/** Everything known of one logical event delivered by several bots or adapters. */
export interface CorrelationRecord {
  key: string;
  kind: EventKind;
  firstAt: number;
  expiresAt: number;
  /** Platform time of the first delivery, seconds. */
  time: number;
  /** In arrival order; the first is the primary. */
  deliveries: Delivery[];
}

/** One event waiting in a debounce buffer (stored without its `raw` payload). */
export interface BufferedPart {
  /** Assigned by the store: a decimal integer, unique per store, growing with arrival. */
  id: string;
  debounceKey: string;
  receivedAt: number;
  event: InboundEvent;
  /** Correlation group of the event, when its namespace is shared (read again at flush). */
  correlationKey?: string;
}

/** A media reference exchanged for a fetchable URL, with the headers the platform wants. */
export interface ResolvedMedia {
  url: string;
  headers?: Record<string, string>;
  mimeType?: string;
  size?: number;
}

/** A downloaded attachment, as the agent reads it. */
export interface MediaItem {
  type: MediaType;
  /** Path relative to the working directory, inside the media folder. */
  path: string;
  mime: string;
  bytes: number;
  sha256: string;
}

/** An attachment that could not be stored, and why. */
export interface MediaFailure {
  url: string;
  reason: string;
}

/** Media of one buffered part after download: stored files and failures. */
export interface PartMedia {
  media: MediaItem[];
  errors: MediaFailure[];
}
