import type { Delivery, EventKind, InboundEvent } from '../../events/inbound.js';
import type {
  AdmitItem,
  AdmitVerdict,
  BufferRule,
  ClaimSpec,
  CorrelationStep,
  OutboxDraft,
  DeliveryState,
} from '../../core/ports/index.js';

/** Builders for store tests: plain data, every time explicit. */

/** The buffer rule items get unless told: a 1 s window, 5 s maxWait, 10 messages. */
export const rule: BufferRule = { windowMs: 1000, maxWaitMs: 5000, maxMessages: 10 };

/** A dedup claim of `key` (already a key, not hashed here). */
export const claim = (key: string, ttlMs = 60_000, maxKeys = 1000, space = 'id:c'): ClaimSpec => ({
  key,
  space,
  ttlMs,
  maxKeys,
});

/** A private-chat message whose id and text are `text`. */
export function event(text: string, sessionKey = 's'): InboundEvent {
  return {
    id: text,
    kind: 'message',
    channel: 'c',
    adapter: 'generic',
    namespace: 'c',
    conversation: { type: 'private', id: sessionKey },
    sessionKey,
    sender: { id: 'u' },
    segments: [],
    text,
    media: [],
    mentions: [],
    timestamp: 1,
    raw: undefined,
  };
}

/** What `item` lets a test set; everything else has its default. */
export interface ItemOptions {
  claims?: string[];
  debounceKey?: string;
  sessionKey?: string;
  at?: number;
  unit?: string;
  closeNow?: boolean;
  rule?: BufferRule;
  correlation?: CorrelationStep;
}

/** One event to admit; `text` names it, and the debounce key defaults to its session. */
export function item(text: string, options: ItemOptions = {}): AdmitItem {
  const sessionKey = options.sessionKey ?? 's';
  const admit: AdmitItem = {
    claims: (options.claims ?? []).map((key) => claim(key)),
    part: {
      debounceKey: options.debounceKey ?? sessionKey,
      receivedAt: options.at ?? 0,
      event: event(text, sessionKey),
    },
    rule: options.rule ?? rule,
    closeNow: options.closeNow ?? false,
  };
  if (options.unit !== undefined) admit.unit = options.unit;
  if (options.correlation) admit.correlation = options.correlation;
  return admit;
}

/** One bot's delivery of an event; `platformId` undefined for a notice. */
export function delivery(botId: string, platformId: string | undefined, at = 0): Delivery {
  const d: Delivery = { channel: `ch-${botId}`, adapter: 'onebot', botId, ids: { message_id: platformId ?? '' }, at };
  if (platformId !== undefined) d.platformId = platformId;
  return d;
}

/** The correlation step of an event under `key`: a message at platform time 100 s, 15 s window, 2 s tolerance unless told. */
export function step(
  key: string,
  d: Delivery,
  options: { kind?: EventKind; time?: number; windowMs?: number } = {},
): CorrelationStep {
  return {
    key,
    kind: options.kind ?? 'message',
    windowMs: options.windowMs ?? 15_000,
    time: options.time ?? 100,
    toleranceS: 2,
    delivery: d,
  };
}

/** An outbox draft whose body names `id`. */
export function draft(id: string, state: DeliveryState = 'none', sessionKey = 's', createdAt = 0): OutboxDraft {
  return {
    id,
    type: 'chat.processedMessage',
    sessionKey,
    channel: 'c',
    createdAt,
    body: `{"type":"chat.processedMessage","id":"${id}"}`,
    state,
    messageIds: [id],
  };
}

/** The verdict names, for compact assertions. */
export const verdicts = (results: readonly AdmitVerdict[]): string[] => results.map((r) => r.verdict);

/** The verdict as `accepted`, or a throw naming what it was. */
export function accepted(result: AdmitVerdict | undefined): Extract<AdmitVerdict, { verdict: 'accepted' }> {
  if (result?.verdict !== 'accepted') throw new Error(`expected accepted, got ${JSON.stringify(result)}`);
  return result;
}
