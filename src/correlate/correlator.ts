import type { Clock } from '../clock.js';
import { ownBot, type BotRef, type InboundEvent } from '../events.js';
import { correlationKey } from './signature.js';

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

/** Everything known of one logical event. */
export interface CorrelationRecord {
  key: string;
  kind: InboundEvent['kind'];
  firstAt: number;
  expiresAt: number;
  /** Platform time of the first delivery, seconds. */
  time: number;
  /** In arrival order; the first is the primary. */
  deliveries: Delivery[];
}

export interface Observation {
  /** Absent when correlation does not apply (see `CorrelatorOptions.sharedNamespaces`). */
  record?: CorrelationRecord;
  /** Another delivery of a logical event already seen. */
  duplicate: boolean;
  /** The same bot delivering the same message again (a platform retry, not another adapter). */
  retry: boolean;
}

export interface CorrelatorOptions {
  crossAdapter: boolean;
  messageWindowMs: number;
  eventWindowMs: number;
  maxGroups: number;
  clock: Clock;
  /**
   * Namespaces served by more than one channel. Only there can another adapter deliver the
   * same message, so only there are deliveries correlated; elsewhere observe() costs nothing.
   */
  sharedNamespaces: ReadonlySet<string>;
}

/** The observation of a delivery in a namespace no other channel serves (shared, never changed). */
const UNCORRELATED: Observation = Object.freeze({ duplicate: false, retry: false });

/** Notices from two implementations may be stamped a second apart; a wider gap is a new event. */
const EVENT_TIME_TOLERANCE_S = 2;

/**
 * Cross-adapter correlation (seed 000), one per runtime. Each logical event gets a group for a
 * window fixed from its first sighting (15 s for messages, 60 s for notices and requests);
 * later deliveries inside it are marked duplicates. Groups live in two insertion-ordered maps,
 * one per window, so expiry pops from the head and eviction past `maxGroups` drops the oldest.
 */
export class Correlator {
  private readonly messages = new Window();
  private readonly events = new Window();
  private readonly byEvent = new WeakMap<object, CorrelationRecord>();
  /** namespace -> bot id -> channel it is connected through. */
  private readonly bots = new Map<string, Map<string, string>>();
  readonly counts = { observed: 0, duplicates: 0, evicted: 0 };

  constructor(private readonly options: CorrelatorOptions) {}

  /** Note a bot account as connected on a channel (from configuration or a delivery). */
  connect(namespace: string, botId: string, channel: string): void {
    let bots = this.bots.get(namespace);
    if (!bots) {
      bots = new Map();
      this.bots.set(namespace, bots);
    }
    if (!bots.has(botId)) bots.set(botId, channel);
  }

  /** Whether deliveries of a namespace are correlated (several channels serve it). */
  correlates(namespace: string): boolean {
    return this.options.crossAdapter && this.options.sharedNamespaces.has(namespace);
  }

  /** Whether an id is one of this runtime's bots in a namespace (bot-loop guard). */
  isOwnBot(namespace: string, id: string): boolean {
    return this.bots.get(namespace)?.has(id) ?? false;
  }

  /** Register a delivery and say whether it repeats a logical event already seen. */
  observe(event: InboundEvent): Observation {
    if (event.botId) this.connect(event.namespace, event.botId, event.channel);
    if (!this.correlates(event.namespace)) return UNCORRELATED;
    const now = this.options.clock.now();
    this.counts.observed++;
    const delivery: Delivery = {
      channel: event.channel, adapter: event.adapter, at: now, ids: event.fields ?? {},
      ...(event.botId === undefined ? {} : { botId: event.botId }),
      ...(event.platformId === undefined ? {} : { platformId: event.platformId }),
    };
    const key = correlationKey(event);
    const groups = event.kind === 'message' ? this.messages : this.events;
    const window = event.kind === 'message' ? this.options.messageWindowMs : this.options.eventWindowMs;
    groups.expire(now);

    let record = groups.get(key);
    if (record && event.kind !== 'message' && Math.abs(record.time - event.timestamp) > EVENT_TIME_TOLERANCE_S) record = undefined;
    if (record) {
      const same = record.deliveries.find((d) => d.channel === event.channel && d.botId === event.botId);
      const retry = same !== undefined && (event.kind !== 'message' || (same.platformId !== undefined && same.platformId === event.platformId));
      // The same bot with another message id: the user really sent it again.
      if (same && !retry) record = undefined;
      else {
        if (!retry) record.deliveries.push(delivery);
        this.counts.duplicates++;
        this.byEvent.set(event, record);
        return { record, duplicate: true, retry };
      }
    }
    record = { key, kind: event.kind, firstAt: now, expiresAt: now + window, time: event.timestamp, deliveries: [delivery] };
    groups.add(record);
    this.evict();
    this.byEvent.set(event, record);
    return { record, duplicate: false, retry: false };
  }

  /**
   * Undo an observation whose delivery could not be recorded (store down): the platform will
   * retry it, and that retry must not be taken for a duplicate of nothing.
   */
  retract(event: InboundEvent): void {
    const record = this.byEvent.get(event);
    if (!record) return;
    (record.kind === 'message' ? this.messages : this.events).remove(record);
    this.byEvent.delete(event);
  }

  /** Let a copy of an event (the stored one) find the same record. */
  link(copy: object, original: object): void {
    const record = this.byEvent.get(original);
    if (record) this.byEvent.set(copy, record);
  }

  /** The event's group; an event that was not correlated gets a record of its own delivery. */
  correlation(event: InboundEvent): CorrelationRecord {
    const record = this.byEvent.get(event);
    if (record) return record;
    const delivery: Delivery = {
      channel: event.channel, adapter: event.adapter, at: event.timestamp * 1000, ids: event.fields ?? {},
      ...(event.botId === undefined ? {} : { botId: event.botId }),
      ...(event.platformId === undefined ? {} : { platformId: event.platformId }),
    };
    return { key: '', kind: event.kind, firstAt: delivery.at, expiresAt: delivery.at, time: event.timestamp, deliveries: [delivery] };
  }

  /** Every bot that delivered this logical event, first arrival first. */
  botsForEvent(event: InboundEvent): BotRef[] {
    const record = this.byEvent.get(event);
    if (!record) return [ownBot(event)];
    return record.deliveries.map((d) => (d.botId === undefined ? { channel: d.channel } : { channel: d.channel, botId: d.botId }));
  }

  /** Connected bots the message mentions, in mention order. */
  mentionedBots(event: InboundEvent): BotRef[] {
    const bots = this.bots.get(event.namespace);
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

  /** Who should answer: a mentioned connected bot, else the first arrival, else the delivering bot. */
  pickReplyBot(event: InboundEvent): BotRef {
    return this.mentionedBots(event)[0] ?? this.botsForEvent(event)[0] ?? ownBot(event);
  }

  stats(): { groups: number; observed: number; duplicates: number; evicted: number } {
    const now = this.options.clock.now();
    this.messages.expire(now);
    this.events.expire(now);
    return { groups: this.messages.size + this.events.size, ...this.counts };
  }

  private evict(): void {
    while (this.messages.size + this.events.size > this.options.maxGroups) {
      const m = this.messages.oldest();
      const e = this.events.oldest();
      const from = !e || (m && m.firstAt <= e.firstAt) ? this.messages : this.events;
      from.dropOldest();
      this.counts.evicted++;
    }
  }
}

/**
 * Live groups of one window length: a key index plus a FIFO of records in creation order
 * (which, with one fixed window, is expiry order). A plain Map is not used as the queue:
 * deleting from the head of a V8 Map leaves holes that every later head lookup walks over.
 */
class Window {
  private readonly byKey = new Map<string, CorrelationRecord>();
  private queue: CorrelationRecord[] = [];
  private head = 0;

  get size(): number {
    return this.byKey.size;
  }

  get(key: string): CorrelationRecord | undefined {
    return this.byKey.get(key);
  }

  /** Make `record` the live group of its key (replacing an older one). */
  add(record: CorrelationRecord): void {
    this.byKey.set(record.key, record);
    this.queue.push(record);
  }

  remove(record: CorrelationRecord): void {
    if (this.byKey.get(record.key) === record) this.byKey.delete(record.key);
  }

  expire(now: number): void {
    for (let record = this.peek(); record && record.expiresAt <= now; record = this.peek()) this.shift();
  }

  /** The oldest live group. */
  oldest(): CorrelationRecord | undefined {
    return this.peek();
  }

  dropOldest(): void {
    if (this.peek()) this.shift();
  }

  /** Head of the queue, skipping records no longer live (replaced or retracted). */
  private peek(): CorrelationRecord | undefined {
    while (this.head < this.queue.length) {
      const record = this.queue[this.head] as CorrelationRecord;
      if (this.byKey.get(record.key) === record) return record;
      this.advance();
    }
    return undefined;
  }

  private shift(): void {
    const record = this.queue[this.head] as CorrelationRecord;
    this.byKey.delete(record.key);
    this.advance();
  }

  private advance(): void {
    this.head++;
    // Compact once the consumed prefix is half the queue: amortized O(1) per record.
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}
