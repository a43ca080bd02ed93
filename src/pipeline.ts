import pino, { type Logger } from 'pino';
import { createAdapter, type Adapter, type RawDelivery } from './adapters/index.js';
import { systemClock, type Clock } from './clock.js';
import type { ChannelConfig, Config, DebounceOptions } from './config/schema.js';
import { Debouncer } from './debounce/debouncer.js';
import { isCommand } from './debounce/merge.js';
import { dedupPlan, type DedupPlan, type DuplicateKind } from './dedup/claims.js';
import { Outlet } from './emit/outlet.js';
import { OutputStage } from './emit/stage.js';
import { RequestError, UnavailableError, isIntakeError } from './errors.js';
import type { InboundEvent } from './events.js';
import { Correlator } from './correlate/correlator.js';
import { Handlers } from './handlers/routes.js';
import { MediaStage } from './media/index.js';
import { AgentPush } from './emit/agent-push.js';
import { parseJson } from './http/body.js';
import { Metrics } from './metrics/index.js';
import { openStore, type Store } from './store/index.js';
import { partId } from './store/part-id.js';
import type { Admission, AdmitResult, BufferedPart } from './store/types.js';

export type Verdict = 'accepted' | 'duplicate' | 'fuzzy_duplicate' | 'correlated' | 'ignored';

/** The ingest answer of CONTRACT §3. */
export interface IngestSummary {
  accepted: number;
  duplicates: number;
  events: Array<{ id: string; verdict: Verdict }>;
}

export interface IngestResult {
  status: number;
  body?: unknown;
  contentType?: string;
}

export interface IntakeDeps {
  config: Config;
  /** Defaults to the store named by `config.store`. */
  store?: Store;
  clock?: Clock;
  logger?: Logger;
  metrics?: Metrics;
  /** Working directory for relative paths (store, media). */
  cwd?: string;
}

/** An event that passed the in-memory checks, on its way into the store (an `Admission`). */
interface Fresh extends Admission {
  event: InboundEvent;
  plan: DedupPlan;
  part: BufferedPart;
}

const verdictOf: Record<DuplicateKind, Verdict> = { deduped: 'duplicate', fuzzy_deduped: 'fuzzy_duplicate' };

/**
 * The pipeline, in the order a delivery meets it:
 *   adapter.verify -> parse -> adapter.normalize -> dedup claims (+ buffer append) in one
 *   store transaction -> answer -> debounce -> merge -> outbox -> emitter / event stream.
 */
export class Pipeline {
  readonly config: Config;
  readonly store: Store;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly outlet: Outlet;
  readonly debouncer: Debouncer;
  readonly correlator: Correlator;
  readonly handlers: Handlers;
  readonly media: MediaStage;
  /** Push to `agent.url`, when configured. */
  readonly push: AgentPush | undefined;
  readonly output: OutputStage;
  private readonly channels = new Map<string, { config: ChannelConfig; adapter: Adapter }>();
  private trimTimer: NodeJS.Timeout | undefined;
  /** Notices and requests wait this long for the other bots' deliveries, then go out once. */
  private readonly noticeHold: DebounceOptions;
  private closing = false;

  constructor(deps: IntakeDeps) {
    this.config = deps.config;
    this.clock = deps.clock ?? systemClock;
    this.logger = deps.logger ?? pino({ level: deps.config.logLevel });
    this.metrics = deps.metrics ?? new Metrics();
    this.store = deps.store ?? openStore(deps.config.store, deps.cwd);
    const hold = deps.config.correlation.noticeHoldMs;
    this.noticeHold = { windowMs: hold, maxWaitMs: hold, maxMessages: Number.MAX_SAFE_INTEGER, media: 'all', flushCommands: false };
    for (const channel of deps.config.channels) this.channels.set(channel.id, { config: channel, adapter: createAdapter(channel) });
    const perNamespace = new Map<string, number>();
    for (const { adapter } of this.channels.values()) perNamespace.set(adapter.namespace, (perNamespace.get(adapter.namespace) ?? 0) + 1);
    const sharedNamespaces = new Set([...perNamespace].filter(([, count]) => count > 1).map(([namespace]) => namespace));
    this.correlator = new Correlator({ ...deps.config.correlation, clock: this.clock, sharedNamespaces });
    for (const { config, adapter } of this.channels.values()) {
      for (const botId of adapter.botIds ?? []) this.correlator.connect(adapter.namespace, botId, config.id);
    }
    this.media = new MediaStage({
      cwd: deps.cwd ?? process.cwd(), channels: [...this.channels.keys()], concurrency: deps.config.media.concurrency,
      clock: this.clock, logger: this.logger, metrics: this.metrics,
      optionsFor: (channel) => this.channels.get(channel)?.config.media ?? this.config.media,
      adapterFor: (channel) => this.channels.get(channel)?.adapter,
    });
    this.push = deps.config.agent.url
      ? new AgentPush({ config: deps.config.agent, store: this.store, clock: this.clock, logger: this.logger, metrics: this.metrics })
      : undefined;
    this.handlers = new Handlers((error, event) => this.logger.error({ err: error, channel: event.channel, messageId: event.platformId }, 'handler failed'));
    this.outlet = new Outlet((error) => this.logger.error({ err: error }, 'output listener failed'));
    const correlator = this.correlator;
    this.output = new OutputStage({
      config: this.config, store: this.store, clock: this.clock, logger: this.logger, metrics: this.metrics, outlet: this.outlet,
      views: correlator,
      collectMedia: (parts) => this.media.collect(parts),
      mediaMode: (channel) => this.channels.get(channel)?.config.debounce.media ?? this.config.debounce.media,
      adapterName: (channel) => this.channels.get(channel)?.adapter.name ?? 'unknown',
      onPending: () => this.push?.added(),
    });
    this.debouncer = new Debouncer({
      clock: this.clock,
      // A part of a channel removed since it was buffered flushes under the global options.
      optionsFor: (part) => {
        // A notice waits for other bots' copies only where other bots can deliver one.
        if (part.event.kind !== 'message') return this.correlator.correlates(part.event.namespace) ? this.noticeHold : noHold;
        return this.channels.get(part.event.channel)?.config.debounce ?? this.config.debounce;
      },
      flush: (batch) => this.output.flushBatch(batch),
      onError: (error, batch) => this.logger.error({ err: error, sessionKey: batch.sessionKey, parts: batch.parts.length }, 'flush failed; the batch stays in the store and is tried again'),
    });
    this.metrics.gauge('inbox_correlator_groups', 'Correlation groups alive', () => correlator.stats().groups);
    this.metrics.counterFrom('inbox_correlator_observed_total', 'Deliveries the correlator observed', () => correlator.counts.observed);
    this.metrics.counterFrom('inbox_correlator_duplicates_total', 'Deliveries marked as duplicates of a logical event', () => correlator.counts.duplicates);
    this.metrics.counterFrom('inbox_correlator_evicted_total', 'Correlation groups evicted past correlation.maxGroups', () => correlator.counts.evicted);
    const push = this.push;
    if (push) {
      this.metrics.gauge('inbox_outbox_pending', 'Processed messages not yet delivered to the agent (outbox depth)', () => push.pending);
      this.metrics.gauge('inbox_outbox_dead', 'Messages in dead letters', () => push.dead);
      this.metrics.gauge('inbox_outbox_max_pending', 'agent.maxPending: past it ingest answers 503', () => deps.config.agent.maxPending);
      this.metrics.gauge('inbox_backpressure', '1 while ingest is refused because the outbox is full', () => (push.saturated ? 1 : 0));
    }
    this.metrics.gauge('inbox_debounce_buffers_open', 'Debounce buffers currently open', () => this.debouncer.open);
    this.metrics.gauge('inbox_event_streams_open', 'Event stream clients connected', () => this.outlet.streamCount);
  }

  /** Re-arm the buffers a previous run left open, and start housekeeping. */
  async start(): Promise<void> {
    if (!this.store.durable) this.logger.warn('store "memory" is volatile: claims, open buffers and the outbox are lost on restart; use "sqlite:<path>" to keep them');
    await this.media.start();
    // Count undelivered output before restored buffers can add to it.
    await this.push?.start();
    const parts = await this.store.openParts();
    for (const part of parts) this.media.begin(part);
    this.debouncer.restore(parts);
    if (parts.length > 0) this.logger.info({ parts: parts.length, buffers: this.debouncer.open }, 're-armed open debounce buffers');
    this.trimTimer = setInterval(() => void this.output.trim(), 60_000);
    this.trimTimer.unref();
  }

  channelOf(id: string): { config: ChannelConfig; adapter: Adapter } {
    const channel = this.channels.get(id);
    if (!channel) throw new RequestError('unknown_channel', 404, `No channel "${id}" is configured; configured channels: ${[...this.channels.keys()].join(', ')}`, { channel: id });
    return channel;
  }

  /** Answer a GET on a webhook URL (platform handshakes). */
  handshake(channelId: string, delivery: RawDelivery): IngestResult {
    const { adapter } = this.channelOf(channelId);
    if (!adapter.handshake) throw new RequestError('no_handshake', 405, `Channel "${channelId}" (${adapter.name}) takes POST only`, { channel: channelId });
    return adapter.handshake(delivery);
  }

  /** Verify, normalize and record one delivery; resolves once everything in it is recorded. */
  async ingest(channelId: string, delivery: RawDelivery): Promise<IngestResult> {
    const { config: channel, adapter } = this.channelOf(channelId);
    if (this.closing) throw new UnavailableError('shutting_down', 'The service is shutting down; retry shortly', 5, { channel: channelId });
    if (this.push?.saturated) {
      throw new UnavailableError('outbox_full', `${this.push.pending} messages are waiting for the agent (agent.maxPending ${this.config.agent.maxPending}); retry later`, 30, { channel: channelId });
    }
    adapter.verify(delivery);
    const normalized = adapter.normalize(parseJson(delivery.body, this.config.server.maxDepth), delivery);
    if (normalized.ignored) this.metrics.message(channel.id, adapter.name, 'ignored', normalized.ignored);
    const summary = normalized.events.length > 0 ? await this.record(channel, normalized.events, delivery.now) : { accepted: 0, duplicates: 0, events: [] };
    if (normalized.reply) return normalized.reply;
    return { status: 200, body: summary };
  }

  private async record(channel: ChannelConfig, events: InboundEvent[], now: number): Promise<IngestSummary> {
    // 1. Correlate and guard, in memory: duplicates of other adapters never reach the store.
    const verdicts: Verdict[] = [];
    const fresh: Fresh[] = [];
    for (const event of events) {
      this.metrics.message(channel.id, event.adapter, 'received');
      if (event.kind === 'message' && this.correlator.isOwnBot(event.namespace, event.sender.id)) {
        this.metrics.message(channel.id, event.adapter, 'looped');
        this.logger.info({ channel: channel.id, messageId: event.platformId, sender: event.sender.id }, 'message from our own bot dropped');
        verdicts.push('ignored');
        continue;
      }
      const observation = this.correlator.observe(event);
      if (observation.duplicate) {
        const kind = observation.retry ? 'deduped' : 'correlated';
        this.metrics.message(channel.id, event.adapter, kind);
        this.logger.info({ channel: channel.id, messageId: event.platformId, sessionKey: event.sessionKey, kind }, 'duplicate delivery');
        verdicts.push(observation.retry ? 'duplicate' : 'correlated');
        this.handlers.dispatch(event, true);
        continue;
      }
      const plan = dedupPlan(event, channel.dedup);
      // The buffered copy drops `raw`: only the normalized event waits out the debounce window.
      const stored = { ...event, raw: undefined };
      if (observation.record) this.correlator.link(stored, event);
      // Notices and requests are held (not merged) in a buffer of their own.
      const id = partId(now);
      const debounceKey = event.kind === 'message' ? debounceKeyOf(event) : `\u0001${id}`;
      fresh.push({ event, plan, claims: plan.claims, part: { id, debounceKey, receivedAt: now, event: stored } });
      verdicts.push('accepted');
    }

    // 2. Claims and buffer entries of the whole delivery, in one store transaction.
    let results: readonly AdmitResult[] = [];
    if (fresh.length > 0) {
      try {
        results = await this.store.admit(fresh, now);
      } catch (error) {
        for (const f of fresh) this.correlator.retract(f.event);
        this.logger.error({ err: error, channel: channel.id }, 'store unavailable; delivery refused');
        throw new UnavailableError('store_unavailable', 'The store is unreachable; nothing was recorded, retry later', 5, { channel: channel.id, cause: error });
      }
    }

    // 3. Recorded: tell handlers, open or extend buffers, answer.
    const summary: IngestSummary = { accepted: 0, duplicates: 0, events: [] };
    let next = 0;
    for (let i = 0; i < events.length; i++) {
      const event = events[i] as InboundEvent;
      let verdict = verdicts[i] as Verdict;
      if (verdict === 'accepted') {
        const f = fresh[next] as Fresh;
        const taken = (results[next++] as AdmitResult).taken;
        if (taken !== -1) {
          const kind = f.plan.kinds[taken] as DuplicateKind;
          this.metrics.message(channel.id, event.adapter, kind);
          this.logger.info({ channel: channel.id, messageId: event.platformId, sessionKey: event.sessionKey, kind }, 'duplicate ignored');
          verdict = verdictOf[kind];
          this.handlers.dispatch(event, true);
        } else {
          this.handlers.dispatch(event, false);
          this.media.begin(f.part);
          this.debouncer.add(f.part, event.kind === 'message' && isCommand(event.text));
        }
      }
      if (verdict === 'accepted') summary.accepted++;
      else if (verdict !== 'ignored') summary.duplicates++;
      summary.events.push({ id: event.id, verdict });
    }
    return summary;
  }

  /** Count a refused delivery against its channel. */
  rejected(channelId: string, error: unknown): void {
    const channel = this.channels.get(channelId);
    if (!channel) return;
    this.metrics.message(channel.config.id, channel.adapter.name, 'rejected');
    this.logger.warn({ channel: channelId, code: isIntakeError(error) ? error.code : 'internal', reason: (error as Error).message }, 'delivery rejected');
  }

  /** Reasons the service should not get traffic now (empty when ready). */
  readinessProblems(): string[] {
    if (this.push?.saturated) return [`outbox full: ${this.push.pending} undelivered (agent.maxPending ${this.config.agent.maxPending})`];
    return [];
  }

  /** `/v1/stats`: per-channel counters, buffers, claims, outbox. */
  async stats(): Promise<Record<string, unknown>> {
    return {
      channels: this.metrics.channelStats(),
      debounce: { open: this.debouncer.open },
      claims: this.store.claimStats(),
      correlator: this.correlator.stats(),
      delivery: this.push
        ? { url: this.push.url, pending: this.push.pending, dead: this.push.dead, maxPending: this.config.agent.maxPending, saturated: this.push.saturated }
        : { url: null },
      store: this.store.kind,
      streams: this.outlet.streamCount,
    };
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /** Stop taking deliveries, flush every open buffer, then close the store. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.trimTimer);
    this.debouncer.stop();
    await this.debouncer.flushAll();
    await this.media.close();
    await this.push?.close();
    await this.store.close();
  }
}

const noHold: DebounceOptions = { windowMs: 0, maxWaitMs: 0, maxMessages: 1, media: 'all', flushCommands: false };

/** Buffers are per session and sender: two people in one group never merge. */
export function debounceKeyOf(event: InboundEvent): string {
  return `${event.sessionKey}\u0000${event.sender.id}`;
}
