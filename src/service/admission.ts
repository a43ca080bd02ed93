import type { Channels } from './channels.js';
import type { Config } from '../config/schema.js';
import type { Bots } from '../correlate/bots.js';
import type { Correlations } from '../correlate/correlations.js';
import { flushWordTest, isCommand } from '../debounce/command.js';
import { claimKey, dedupPlan } from '../dedup/claims.js';
import type { InboundEvent } from '../events/inbound.js';
import { isSecondThought } from '../events/second-thought.js';
import type { Plan } from '../ingest/admit.js';
import type { AdmitItem, BufferRule, DebounceBuffers } from '../core/ports/index.js';
import type { TypingSignal } from '../adapters/kit/types.js';

/**
 * `debounce.typingMs` when unset (contract §13). Optional in the schema, like `flushWords`, so
 * the resolved `debounce` of a configuration without it reads as it did before typing signals.
 */
export const defaultTypingMs = 3_000;

/** A signed delivery's id is remembered at least as long as its signature could be replayed. */
const SIGNATURE_TOLERANCE_MS = 5 * 60_000;

/**
 * Admission policy: how one event enters the store, decided from the stages' rules. Its dedup
 * claims (exact id, fuzzy content, a signed delivery's id), its correlation step (only in
 * namespaces where several bots deliver), the buffer it joins and the rule that closes that buffer.
 */
export function admissionPlanner(
  config: Config,
  channels: Channels,
  bots: Bots,
  correlations: Pick<Correlations, 'observed'>,
) {
  const noticeHold: BufferRule = {
    windowMs: config.correlation.noticeHoldMs,
    maxWaitMs: config.correlation.noticeHoldMs,
    maxMessages: Number.MAX_SAFE_INTEGER,
  };
  const noHold: BufferRule = { windowMs: 0, maxWaitMs: 0, maxMessages: 1 };
  // One shared, frozen empty array for the buffered copy's empty lists: an empty array per
  // message is more for the young-generation collector to copy while the message waits.
  const none = Object.freeze([]) as unknown as never[];
  // Each channel's `debounce.flushWords`, as a test built once.
  const globalFlushWord = flushWordTest(config.debounce.flushWords);
  const claimsAll = new Set(channels.ids().filter((id) => channels.adapterOf(id)?.deliveryClaimsAll === true));
  const flushWords = new Map(channels.ids().map((id) => [id, flushWordTest(channels.debounceOf(id).flushWords)]));

  return function plan(event: InboundEvent, now: number, index: number, deliveryId: string | undefined): Plan {
    const channel = channels.get(event.channel)?.config;
    const dedup = channel?.dedup ?? config.dedup;
    const { claims, kinds } = dedupPlan(event, dedup);
    if (deliveryId !== undefined && (event.platformId === undefined || claimsAll.has(event.channel))) {
      // A replayed signed delivery: its events have no ids, but the delivery has one (a Matrix
      // transaction: its id, whatever a replay of it carries).
      claims.unshift({
        key: claimKey('wh', event.channel, deliveryId, String(index)),
        space: `wh:${event.channel}`,
        ttlMs: Math.max(dedup.idTtlMs, SIGNATURE_TOLERANCE_MS),
        maxKeys: dedup.maxKeys,
      });
      kinds.unshift('deduped');
    }
    // A second thought names its output and message itself: never one group with another.
    const thought = isSecondThought(event);
    const correlation = thought ? undefined : bots.step(event, now);
    if (correlation) correlations.observed();
    const debounce = channel?.debounce ?? config.debounce;
    const message = event.kind === 'message';
    const item: AdmitItem = {
      claims,
      part: {
        // Notices and requests are held (never merged) in a buffer of their own.
        // Joined, not concatenated: `+` makes a rope of two strings that the buffer's map then
        // flattens into a third, all three kept while the message waits.
        debounceKey: message
          ? messageDebounceKey(event.sessionKey, event.sender.id)
          : ['\u0001', event.channel, '\u0000', event.id].join(''),
        receivedAt: now,
        // The buffered copy drops `raw` and `segments` (read only by the correlation step,
        // above): what waits out the window, in memory or in a row, is what the output needs.
        event: {
          ...event,
          raw: undefined,
          segments: none,
          media: event.media.length === 0 ? none : event.media,
          mentions: event.mentions.length === 0 ? none : event.mentions,
        },
        ...(correlation ? { correlationKey: correlation.key } : {}),
      },
      rule: message ? debounce : !thought && bots.correlates(event.namespace) ? noticeHold : noHold,
      closeNow:
        message &&
        ((debounce.flushCommands && isCommand(event.text)) ||
          (flushWords.get(event.channel) ?? globalFlushWord)(event.text)),
      ...(correlation ? { correlation } : {}),
      ...(event.fields?.media_group_id === undefined ? {} : { unit: `album:${event.fields.media_group_id}` }),
    };
    return { item, kinds };
  };
}

/** The buffer of a sender's messages in a session: one per sender, so two people talking at once are two outputs. */
export function messageDebounceKey(sessionKey: string, senderId: string): string {
  return [sessionKey, senderId].join('\u0000');
}

/**
 * Typing (contract §13): a typing signal holds the open buffer of its sender for the channel's
 * `debounce.typingMs` past `now`. Resolves the buffer's new deadline, or undefined when nothing
 * moved (typing off, no such buffer, a store without the step).
 */
export function typingHold(channels: Channels, store: Pick<DebounceBuffers, 'holdForTyping'>) {
  return async function typing(channelId: string, signal: TypingSignal, now: number): Promise<number | undefined> {
    const holdMs = channels.debounceOf(channelId).typingMs ?? defaultTypingMs;
    if (holdMs === 0 || !store.holdForTyping) return undefined;
    const debounceKey = messageDebounceKey(signal.sessionKey, signal.senderId);
    return store.holdForTyping(debounceKey, signal.sessionKey, now + holdMs, now);
  };
}
