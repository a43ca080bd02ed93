/**
 * The conversation around an output (§12 of the contract): the messages of a session that did
 * not reach the agent, kept until the next output carries them as `context`.
 */
import type { MediaType, Party, Trigger } from './inbound.js';

export type { Trigger } from './inbound.js';

/** One message kept as context, as an output lists it. */
export interface ContextMessage {
  messageId: string;
  sender: Party;
  content: string;
  /** Seconds since the epoch, as the platform stamped it. */
  timestamp: number;
  /** Attachments by reference: context media is not downloaded. */
  media: Array<{ type: MediaType; ref: string }>;
}

/** A context message as the store keeps it: its place in the conversation and when it was kept (ms). */
export interface KeptMessage {
  seq: number;
  at: number;
  message: ContextMessage;
}

/** A conversation as the store holds it. */
export interface ConversationState {
  /** Modes set at run time for this conversation (`PUT /v1/conversations/<sessionKey>/activation`). */
  activation?: { group?: 'always' | 'mention' | 'never'; private?: 'always' | 'mention' | 'never' };
  /** Kept messages since the session's last output, oldest first. */
  context: KeptMessage[];
  /** Messages trimmed past `context.maxMessages` since the session's last output. */
  dropped: number;
  /** Recalls and edits of the session's messages (contract §13), oldest first: present when there are some. */
  revisions?: Revision[];
  /** A human answering in the session (contract §13), while its record lasts: active until `until`. */
  takeover?: Takeover;
}

/**
 * A recall or an edit of one message of a session (contract §13), as the store keeps it: the
 * flush applies it to a batch that holds the message, the store to the kept context at once.
 */
export interface Revision {
  kind: 'recall' | 'edit';
  /** The message's id, as the platform names it (a part's `platformId`, a context entry's `messageId`). */
  messageId: string;
  /** When it was recorded (ms). */
  at: number;
  /** An edit's new text. */
  content?: string;
}

/** A human taking over a session (contract §13): its batches become context until `until` (ms). */
export interface Takeover {
  /** When it started (ms): its end names it, so a later takeover is never ended by an earlier one's timer. */
  since: number;
  until: number;
}

/** A message one of our bots sent, as a platform reports it (OneBot `message_sent`, an action's answer). */
export interface SentMessage {
  namespace: string;
  /** The id as the sending bot's platform gives it: what a reply to it quotes. */
  messageId: string;
  botId?: string;
  content?: string;
  /** The session it was sent in, when the platform says: a message not sent through us there is a human answering (contract §13). */
  sessionKey?: string;
  /** The platform says a person sent it from the bot's own account (WhatsApp `smb_message_echoes`). */
  byHuman?: boolean;
}

/** Why a batch reaches the agent, and the conversation since the session's last output. */
export interface Addressed {
  addressed: true;
  trigger: Trigger;
  context: ContextMessage[];
  /** Context messages left out: trimmed in the store, too old, or past `context.maxChars`. */
  contextDropped: number;
  /** The last kept message read: the output's commit clears the context up to it. */
  contextUpTo?: number;
  /** Every kept message read, for the quote of a message the payload only names by id. */
  kept: readonly KeptMessage[];
}
