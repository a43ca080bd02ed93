import type { Addressed } from '../events/context.js';
import type { BotRef, BufferedPart, InboundEvent, PartMedia } from '../events/inbound.js';
import type { ProcessedEvent, ProcessedMessage } from '../events/output.js';
import { OUTPUT_SCHEMA_VERSION, type ForwardFailure } from '../events/reply.js';
import { joinFragments } from './join.js';
import type { ReplyFields } from './reply.js';

/** What the correlator knows of the deliveries behind a batch: who delivered it, who answers. */
export interface BotFields {
  replyBot: BotRef;
  bots: BotRef[];
  mentionedBots: BotRef[];
}

/**
 * Merge a batch into the processed message, without `seq` (the outbox assigns it).
 * `mediaMode: 'first'` keeps only the first attachment of the batch, as a channel may ask (`debounce.media`).
 * `forwardErrors`: merged forwards that could not be read whole; listed only when there are some.
 */
export function buildProcessedMessage(
  id: string,
  parts: readonly BufferedPart[],
  media: readonly PartMedia[],
  mediaMode: 'all' | 'first',
  bots: BotFields,
  replies: ReplyFields,
  reach: Addressed,
  forwardErrors: ForwardFailure[] = [],
): Omit<ProcessedMessage, 'seq'> {
  const first = (parts[0] as BufferedPart).event;
  const last = (parts[parts.length - 1] as BufferedPart).event;
  const items = media.length === 0 ? [] : media.flatMap((entry) => entry.media);
  // One literal and the fields after `replyBot` added in their order (the JSON body keeps it),
  // the optional ones only when present: no object spread per output (bench/pipeline.mjs). The
  // cast covers the fields added below it.
  const message: Omit<ProcessedMessage, 'seq'> = {
    type: 'chat.processedMessage',
    id,
    schemaVersion: OUTPUT_SCHEMA_VERSION,
    sessionKey: first.sessionKey,
    content: parts.length === 1 ? first.text.trim() : joinFragments(parts.map((part) => part.event.text)),
    media: mediaMode === 'first' ? items.slice(0, 1) : items,
    sourceChannel: first.adapter,
    channel: first.channel,
    timestamp: last.timestamp,
    messageIds: parts.map(messageIdOf),
    parts: replies.parts,
    merged: parts.length,
    sender: last.sender,
    conversation: first.conversation,
    replyBot: bots.replyBot,
  } as Omit<ProcessedMessage, 'seq'>;
  if (replies.reply) message.reply = replies.reply;
  if (replies.quote) message.quote = replies.quote;
  message.bots = bots.bots;
  message.mentionedBots = bots.mentionedBots;
  message.mediaErrors = media.length === 0 ? [] : media.flatMap((entry) => entry.errors);
  if (forwardErrors.length > 0) message.forwardErrors = forwardErrors;
  message.trigger = reach.trigger;
  message.context = reach.context;
  message.contextDropped = reach.contextDropped;
  return message;
}

const messageIdOf = (part: BufferedPart) => part.event.platformId ?? part.event.id;

/** A notice or request as output, with each delivering bot's own ids. */
export function buildProcessedEvent(
  id: string,
  event: InboundEvent,
  participants: ProcessedEvent['participants'],
  bots: Omit<BotFields, 'mentionedBots'>,
): Omit<ProcessedEvent, 'seq'> {
  return {
    type: event.kind === 'request' ? 'chat.request' : 'chat.notice',
    id,
    schemaVersion: OUTPUT_SCHEMA_VERSION,
    sessionKey: event.sessionKey,
    detail: event.detail ?? event.kind,
    ...(event.subType === undefined ? {} : { subType: event.subType }),
    sourceChannel: event.adapter,
    channel: event.channel,
    timestamp: event.timestamp,
    sender: event.sender,
    conversation: event.conversation,
    fields: event.fields ?? {},
    participants,
    replyBot: bots.replyBot,
    bots: bots.bots,
  };
}
