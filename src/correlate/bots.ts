import { ownBot, type BotRef, type CorrelationRecord, type InboundEvent } from '../events/inbound.js';
import type { CorrelationStep } from '../core/ports/index.js';
import { correlationKey } from './signature.js';

export interface CorrelationOptions {
  crossAdapter: boolean;
  messageWindowMs: number;
  eventWindowMs: number;
  /**
   * Namespaces where more than one bot account can deliver (several channels, or one channel
   * that carries several bots). Only there can another bot deliver the same message, so only
   * there are deliveries correlated; elsewhere it costs nothing.
   */
  correlatedNamespaces: ReadonlySet<string>;
}

/** Notices from two implementations may be stamped a second apart; a wider gap is a new event. */
const EVENT_TIME_TOLERANCE_S = 2;

/**
 * Cross-adapter correlation: which bots this runtime knows, and the correlation step
 * of an event. The groups themselves are store state (`Store.admit` decides), so every instance
 * and every restart sees the same participants; this keeps only what configuration and
 * deliveries taught it about bot accounts (the bot-loop guard and mention lookup).
 */
export class Bots {
  /** namespace -> bot id -> channel it is connected through. */
  private readonly byNamespace = new Map<string, Map<string, string>>();

  constructor(private readonly options: CorrelationOptions) {}

  /** Note a bot account as connected on a channel (from configuration or a delivery). */
  connect(namespace: string, botId: string, channel: string): void {
    let bots = this.byNamespace.get(namespace);
    if (!bots) this.byNamespace.set(namespace, (bots = new Map()));
    if (!bots.has(botId)) bots.set(botId, channel);
  }

  /**
   * Note every bot a correlation group names. The group is store state: it lists the bots whose
   * copies other instances admitted, which this one never heard from, and a mention of them
   * must still pick them to reply.
   */
  learn(group: CorrelationRecord, namespaceOf: (channel: string) => string | undefined): void {
    for (const delivery of group.deliveries) {
      const namespace = namespaceOf(delivery.channel);
      if (delivery.botId !== undefined && namespace !== undefined)
        this.connect(namespace, delivery.botId, delivery.channel);
    }
  }

  /** Whether deliveries of a namespace are correlated (more than one bot can deliver there). */
  correlates(namespace: string): boolean {
    return this.options.crossAdapter && this.options.correlatedNamespaces.has(namespace);
  }

  /** Whether an id is one of this runtime's bots in a namespace (bot-loop guard). */
  isOwnBot(namespace: string, id: string): boolean {
    return this.byNamespace.get(namespace)?.has(id) ?? false;
  }

  /** The correlation step of a delivery, or undefined where correlation does not apply. */
  step(event: InboundEvent, now: number): CorrelationStep | undefined {
    if (event.botId) this.connect(event.namespace, event.botId, event.channel);
    if (!this.correlates(event.namespace)) return undefined;
    return {
      key: correlationKey(event),
      kind: event.kind,
      windowMs: event.kind === 'message' ? this.options.messageWindowMs : this.options.eventWindowMs,
      time: event.timestamp,
      toleranceS: event.kind === 'message' ? Number.MAX_SAFE_INTEGER : EVENT_TIME_TOLERANCE_S,
      delivery: {
        channel: event.channel,
        adapter: event.adapter,
        at: now,
        ids: event.fields ?? {},
        ...(event.botId === undefined ? {} : { botId: event.botId }),
        ...(event.platformId === undefined ? {} : { platformId: event.platformId }),
      },
    };
  }

  /** Connected bots the message mentions, in mention order. */
  mentionedBots(event: InboundEvent): BotRef[] {
    const bots = this.byNamespace.get(event.namespace);
    if (!bots) return [];
    const seen = new Set<string>();
    const out: BotRef[] = [];
    for (const id of event.mentions) {
      const channel = bots.get(id);
      if (channel === undefined || seen.has(id)) continue;
      seen.add(id);
      out.push({ channel, botId: id });
    }
    return out;
  }
}

/** Every bot that delivered the logical event of a group, first arrival first. */
export function botsOf(record: CorrelationRecord | undefined, event: InboundEvent): BotRef[] {
  if (!record) return [ownBot(event)];
  return record.deliveries.map((d) =>
    d.botId === undefined ? { channel: d.channel } : { channel: d.channel, botId: d.botId },
  );
}

/** The group of an event that was not correlated: its own delivery alone. */
export function soloRecord(event: InboundEvent): CorrelationRecord {
  const at = event.timestamp * 1000;
  return {
    key: '',
    kind: event.kind,
    firstAt: at,
    expiresAt: at,
    time: event.timestamp,
    deliveries: [
      {
        channel: event.channel,
        adapter: event.adapter,
        at,
        ids: event.fields ?? {},
        ...(event.botId === undefined ? {} : { botId: event.botId }),
        ...(event.platformId === undefined ? {} : { platformId: event.platformId }),
      },
    ],
  };
}

/** Who should answer: a mentioned connected bot, else the first arrival, else the delivering bot. */
export function pickReplyBot(mentioned: readonly BotRef[], bots: readonly BotRef[], event: InboundEvent): BotRef {
  return mentioned[0] ?? bots[0] ?? ownBot(event);
}
