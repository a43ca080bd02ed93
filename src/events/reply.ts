/**
 * What an agent needs to answer a message through the bot that should answer it: the reply
 * handle of `replyBot`, the message being replied to, and each bot's own message ids. The
 * platform values are named as the platform's reply API names them (docs/output.md).
 */
import type { BotRef, ConversationType, MediaType, Party } from './inbound.js';

/** The version of the output shape (`docs/schema/output-v1.schema.json`); grows on a breaking change only. */
export const OUTPUT_SCHEMA_VERSION = 1;

/** A value of a reply parameter: ids are numbers where the platform's API takes integers. */
export type ReplyValue = string | number | { [key: string]: string | number };

/** One bot's view of one delivery, from which its adapter builds the reply handle. */
export interface ReplyTarget {
  /** The ids the adapter collected for this bot (InboundEvent.fields, correlation delivery ids); `{}` when this bot did not receive the message. */
  ids: Readonly<Record<string, string>>;
  conversation: { type: ConversationType; id: string };
  sender: Party;
  botId?: string;
  /** When this bot's copy arrived, ms (LINE's reply token and QQ's passive reply window count from here). */
  receivedAt: number;
}

/** The message a message replies to, as the platform names it (Telegram reply_to_message, OneBot reply segment, ...). */
export interface Quote {
  messageId: string;
  senderId?: string;
  text?: string;
  /** The quoted text: from the payload where the platform includes it, else from the messages the store holds. */
  content?: string;
  /** Whether one of our bots wrote the quoted message, when known. */
  fromBot?: boolean;
}

/** What an adapter makes of a ReplyTarget. */
export interface ReplyParts {
  /** The platform's parameters of the reply call, by the platform's names. */
  params: Record<string, ReplyValue>;
  /** This bot's own id of the message, when it received it. */
  messageId?: string;
  quote?: Quote;
  /** When the handle stops working, ms since the epoch (LINE replyToken, DingTalk sessionWebhook, ...). */
  expiresAt?: number;
}

/** The handle of the output: `replyBot` and what a reply through it needs. */
export interface ReplyHandle extends BotRef {
  params: Record<string, ReplyValue>;
  expiresAt?: number;
}

/**
 * One message a forward carries: its original author (`id` empty where the platform hides it),
 * its text, when it was first sent, and its attachments by the platform's handle or URL.
 */
export interface ForwardedMessage {
  sender: Party;
  content: string;
  timestamp: number;
  media: Array<{ type: MediaType; ref: string }>;
}

/** A node of a merged forward as the platform's answer gives it: a message, and a merged forward nested in it. */
export interface ForwardNode extends ForwardedMessage {
  /** A merged forward inside this node: its nodes where the answer inlines them, else its id to read. */
  nested?: { id?: string; nodes?: ForwardNode[] };
}

/** A merged forward that could not be read (whole or in part): its id and why. */
export interface ForwardFailure {
  id: string;
  reason: string;
}

/** One merged part of a message: its time, what it quotes, and every bot's own id of it. */
export interface MessagePart {
  /** Its entry of `messageIds`. */
  messageId: string;
  timestamp: number;
  senderId: string;
  quote?: Quote;
  /** Present when the part is a forward: the messages it carries, as far as they are known (empty when the platform gives only a handle). */
  forwarded?: ForwardedMessage[];
  /** Every bot that received this part, first arrival first, with its own platform message id. */
  bots: Array<BotRef & { messageId?: string }>;
}
