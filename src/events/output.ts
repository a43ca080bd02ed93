import type { ContextMessage } from './context.js';
import type { BotRef, ConversationType, MediaFailure, MediaItem, Party, Trigger } from './inbound.js';
import type { ForwardFailure, MessagePart, Quote, ReplyHandle } from './reply.js';

/** Where an output stands with the agent push: none (not pushed), pending, delivered, dead. */
export type DeliveryState = 'none' | 'pending' | 'delivered' | 'dead';

/** The one event the agent reads (docs/output.md). */
export interface ProcessedMessage {
  type: 'chat.processedMessage';
  id: string;
  seq: number;
  /** The version of this shape (`docs/schema/output-v1.schema.json`). */
  schemaVersion: 1;
  sessionKey: string;
  content: string;
  media: MediaItem[];
  sourceChannel: string;
  channel: string;
  timestamp: number;
  messageIds: string[];
  /** The merged messages, in order: each with every bot's own platform message id. */
  parts: MessagePart[];
  merged: number;
  sender: Party;
  conversation: { type: ConversationType; id: string };
  replyBot: BotRef;
  /** What a reply through `replyBot` needs, by the platform's names (docs/output.md, per platform). */
  reply?: ReplyHandle;
  /** The message this one replies to, when the platform says. */
  quote?: Quote;
  bots: BotRef[];
  mentionedBots: BotRef[];
  mediaErrors: MediaFailure[];
  /** Merged forwards that could not be read, or only in part (failed, timed out, past a `forwards` bound); present only when there are some. */
  forwardErrors?: ForwardFailure[];
  /** What addressed the batch to the agent (contract §12). */
  trigger: Trigger;
  /** The conversation's messages that did not reach the agent since its previous output, oldest first. */
  context: ContextMessage[];
  /** Context messages left out (too many, too old, too long). */
  contextDropped: number;
  /** Agent turns: held messages released when the turn of this output id closed. */
  followsUp?: string;
  /** Emitted while the turn of this output id was open (steer); that turn stays open. */
  during?: string;
  /** Emitted closing the turn of this output id (interrupt); this output opens the next. */
  interrupts?: string;
}

/** A notice or request, once per logical event (docs/output.md). */
export interface ProcessedEvent {
  type: 'chat.notice' | 'chat.request';
  id: string;
  seq: number;
  /** The version of this shape (`docs/schema/output-v1.schema.json`). */
  schemaVersion: 1;
  sessionKey: string;
  /** `group_increase`, `friend`, `reaction`, ... */
  detail: string;
  subType?: string;
  sourceChannel: string;
  channel: string;
  timestamp: number;
  sender: Party;
  conversation: { type: ConversationType; id: string };
  /** Identifying fields of the event (group_id, user_id, operator_id, ...). */
  fields: Record<string, string>;
  /** Every delivery of this event, with each bot's own ids (message id, request flag). */
  participants: Array<BotRef & { ids: Record<string, string> }>;
  replyBot: BotRef;
  bots: BotRef[];
}

/** A message already emitted in `outputId`, taken back by its sender or a moderator (contract §13). */
export interface RetractedEvent {
  type: 'chat.retracted';
  id: string;
  seq: number;
  schemaVersion: 1;
  sessionKey: string;
  /** The output that carried the message. */
  outputId: string;
  /** The message's platform id, as that output lists it in `messageIds`. */
  messageId: string;
  channel: string;
  /** Seconds since the epoch: when the recall was reported. */
  timestamp: number;
}

/** A message already emitted in `outputId`, rewritten by its sender (contract §13). */
export interface EditedEvent {
  type: 'chat.edited';
  id: string;
  seq: number;
  schemaVersion: 1;
  sessionKey: string;
  outputId: string;
  messageId: string;
  /** The message's text as it reads now. */
  content: string;
  /** Its attachments by reference, as context lists them (not downloaded). */
  media: ContextMessage['media'];
  channel: string;
  timestamp: number;
}

/** A human answering in a session (contract §13): its messages are held back as context while `active`. */
export interface TakeoverEvent {
  type: 'chat.takeover';
  id: string;
  seq: number;
  schemaVersion: 1;
  sessionKey: string;
  active: boolean;
  /** Milliseconds since the epoch: when it ends (active), or ended. */
  until: number;
  /** The channel whose message started it; empty when it was started by hand. */
  channel: string;
  /** Seconds since the epoch. */
  timestamp: number;
}

/** What second thoughts emit beside the messages. */
export type SecondThought = RetractedEvent | EditedEvent | TakeoverEvent;

export type Output = ProcessedMessage | ProcessedEvent | SecondThought;
export type OutputType = Output['type'];
export type OutputOf<T extends OutputType> = T extends 'chat.processedMessage'
  ? ProcessedMessage
  : T extends SecondThought['type']
    ? Extract<SecondThought, { type: T }>
    : ProcessedEvent;

/** The output event of an outbox record, with its seq in place. */
export function outputOf(record: { body: string; seq: number }): Output {
  const { type, id, ...rest } = JSON.parse(record.body) as { type: Output['type']; id: string } & Record<
    string,
    unknown
  >;
  return { type, id, seq: record.seq, ...rest } as unknown as Output;
}

/** The JSON text of an outbox record's event, built without re-serializing the body. */
export function outputJson(record: { body: string; seq: number; id: string }): string {
  // The body is stored as `{"type":...,"id":"...",<rest>}` without seq: splice seq in after id.
  const marker = `"id":${JSON.stringify(record.id)}`;
  const at = record.body.indexOf(marker);
  if (at === -1) return JSON.stringify(outputOf(record));
  const end = at + marker.length;
  return `${record.body.slice(0, end)},"seq":${record.seq}${record.body.slice(end)}`;
}
