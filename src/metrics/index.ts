import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Actions of `inbox_messages_total`. */
export type MessageAction =
  | 'received'
  | 'deduped'
  | 'fuzzy_deduped'
  | 'correlated'
  | 'debounced'
  | 'emitted'
  | 'rejected'
  | 'ignored'
  | 'looped'
  | 'held'
  | 'context'
  | 'denied'
  | 'over_budget'
  | 'typing'
  | 'retracted'
  | 'edited'
  | 'human_active';
export type MediaResult = 'ok' | 'failed' | 'blocked' | 'too_large' | 'timeout' | 'disk';
export type DeliveryResult = 'delivered' | 'retried' | 'dead';

/**
 * One Prometheus registry and the named counters. Labels carry channel ids and outcomes only,
 * never message, user or session ids (unbounded cardinality, and personal data).
 * Per-channel tallies are mirrored in plain maps for `/v1/stats`.
 *
 * `inbox_messages_total` moves several times per message, so it is kept as plain numbers and
 * handed to prom-client when scraped (its `collect` hook): an increment is one addition, with
 * no label hashing and no allocation on the ingest path.
 */
export class Metrics {
  readonly registry = new Registry();
  /** `inbox_messages_total` as channel -> adapter -> action -> count. */
  private readonly messageCounts = new Map<string, Map<string, Map<MessageAction, number>>>();
  private readonly mediaBytes: Counter<'channel'>;
  private readonly mediaDownloads: Counter<'channel' | 'result'>;
  private readonly delivery: Counter<'result'>;
  private readonly storeErrors: Counter<'op'>;
  private readonly connectionEvents: Counter<'channel' | 'transport' | 'event'>;
  readonly deliveryLatency: Histogram;
  /** Agent turns: from a held message's arrival to its release. */
  readonly turnHold: Histogram;
  private readonly tallies = new Map<string, Map<string, number>>();

  /** Node's process metrics start at the first scrape (see `scrape`), or never when off. */
  private defaultMetrics: 'off' | 'waiting' | 'on';

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.defaultMetrics = options.defaultMetrics === false ? 'off' : 'waiting';
    const counts = this.messageCounts;
    new Counter({
      name: 'inbox_messages_total',
      help: 'Inbound messages by channel and what happened to them',
      labelNames: ['channel', 'adapter', 'action'],
      registers,
      collect() {
        this.reset();
        for (const [channel, adapters] of counts) {
          for (const [adapter, actions] of adapters)
            for (const [action, value] of actions) this.inc({ channel, adapter, action }, value);
        }
      },
    });
    this.mediaBytes = new Counter({
      name: 'inbox_media_downloaded_bytes_total',
      help: 'Bytes of media stored',
      labelNames: ['channel'],
      registers,
    });
    this.mediaDownloads = new Counter({
      name: 'inbox_media_downloads_total',
      help: 'Media downloads by result',
      labelNames: ['channel', 'result'],
      registers,
    });
    this.delivery = new Counter({
      name: 'inbox_delivery_total',
      help: 'Pushes to the agent by result',
      labelNames: ['result'],
      registers,
    });
    this.storeErrors = new Counter({
      name: 'inbox_store_errors_total',
      help: 'Store calls that failed, by operation',
      labelNames: ['op'],
      registers,
    });
    this.connectionEvents = new Counter({
      name: 'inbox_connection_events_total',
      help: 'Bot connections opened, closed, refused and reopened',
      labelNames: ['channel', 'transport', 'event'],
      registers,
    });
    this.deliveryLatency = new Histogram({
      name: 'inbox_delivery_latency_seconds',
      help: 'From emit to the agent acknowledging it',
      registers,
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
    });
    this.turnHold = new Histogram({
      name: 'inbox_turn_hold_seconds',
      help: "Agent turns: from a held message's arrival to its release",
      registers,
      buckets: [0.5, 1, 5, 15, 30, 60, 120, 300, 600],
    });
  }

  /**
   * The Prometheus exposition. Node's default process metrics (event-loop lag monitor, GC
   * observer) wake the process and cost CPU per request even when nobody reads them, so they
   * are registered at the first scrape: a deployment that scrapes gets them from its second
   * scrape on, one that never scrapes pays nothing.
   */
  async scrape(): Promise<string> {
    if (this.defaultMetrics === 'waiting') {
      this.defaultMetrics = 'on';
      collectDefaultMetrics({ register: this.registry });
    }
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Count one message event for a channel. */
  message(channel: string, adapter: string, action: MessageAction, by = 1): void {
    let adapters = this.messageCounts.get(channel);
    if (!adapters) this.messageCounts.set(channel, (adapters = new Map()));
    let actions = adapters.get(adapter);
    if (!actions) adapters.set(adapter, (actions = new Map()));
    actions.set(action, (actions.get(action) ?? 0) + by);
  }

  media(channel: string, result: MediaResult, bytes: number): void {
    this.mediaDownloads.inc({ channel, result });
    this.tally(channel, `media_${result}`, 1);
    if (bytes > 0) {
      this.mediaBytes.inc({ channel }, bytes);
      this.tally(channel, 'media_bytes', bytes);
    }
  }

  /** A store call that failed (`admit`, `flush`, ...): the store is away or broken. */
  storeError(op: string): void {
    this.storeErrors.inc({ op });
  }

  deliveryResult(channel: string, result: DeliveryResult): void {
    this.delivery.inc({ result });
    this.tally(channel, `delivery_${result}`, 1);
  }

  connectionEvent(channel: string, transport: string, event: 'open' | 'close' | 'refused' | 'reconnect'): void {
    this.connectionEvents.inc({ channel, transport, event });
  }

  /** `inbox_connections{channel, transport}`: the open connections, read at scrape time. */
  connections(read: () => Iterable<{ channel: string; transport: string; state: string }>): void {
    new Gauge({
      name: 'inbox_connections',
      help: 'Bot connections open on this instance',
      labelNames: ['channel', 'transport'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const { channel, transport, state } of read()) if (state === 'open') this.inc({ channel, transport });
      },
    });
  }

  /** Register a gauge whose value is read at scrape time. */
  gauge(name: string, help: string, read: () => number | Promise<number>): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        this.set(await read());
      },
    });
  }

  /** Register a counter by one label whose running totals are kept elsewhere and read at scrape time. */
  labelledCounterFrom(name: string, help: string, label: string, read: () => Readonly<Record<string, number>>): void {
    new Counter({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [value, total] of Object.entries(read())) this.inc({ [label]: value }, total);
      },
    });
  }

  /** Register a histogram a stage observes (one that only some deployments have, as claims). */
  histogram(name: string, help: string, buckets: number[]): Histogram {
    return new Histogram({ name, help, buckets, registers: [this.registry] });
  }

  /** Register a counter whose running total is kept elsewhere and read at scrape time. */
  counterFrom(name: string, help: string, read: () => number): void {
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  }

  /** Per-channel counts for `/v1/stats`. */
  channelStats(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const [channel, adapters] of this.messageCounts) {
      const counts = (out[channel] ??= {});
      for (const actions of adapters.values())
        for (const [action, value] of actions) counts[action] = (counts[action] ?? 0) + value;
    }
    for (const [channel, counts] of this.tallies) Object.assign((out[channel] ??= {}), Object.fromEntries(counts));
    return out;
  }

  private tally(channel: string, key: string, by: number): void {
    let counts = this.tallies.get(channel);
    if (!counts) {
      counts = new Map();
      this.tallies.set(channel, counts);
    }
    counts.set(key, (counts.get(key) ?? 0) + by);
  }
}
