import { EventEmitter } from 'node:events';
import pino, { type Logger } from 'pino';
import { createAdapter, type Adapter, type RawDelivery } from './adapters/index.js';
import { systemClock, type Clock } from './clock.js';
import type { ChannelConfig, Config } from './config/schema.js';
import { Debouncer, type Batch } from './debounce/debouncer.js';
import { isCommand } from './debounce/merge.js';
import { dedupPlan, type DuplicateKind } from './dedup/claims.js';
import { buildProcessedEvent, buildProcessedMessage, ownBot, type PartMedia } from './emit/build.js';
import { Outlet } from './emit/outlet.js';
import { outputId } from './emit/output-id.js';
import type { Output } from './emit/output.js';
import { RequestError, UnavailableError, isIntakeError } from './errors.js';
import type { InboundEvent } from './events.js';
import { parseJson } from './http/body.js';
import { Metrics } from './metrics/index.js';
import { openStore, type Store } from './store/index.js';
import { partId } from './store/part-id.js';
import type { Admission, OutboxDraft, OutboxRecord } from './store/types.js';

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
  readonly events = new EventEmitter();
  private readonly channels = new Map<string, { config: ChannelConfig; adapter: Adapter }>();
  private trimTimer: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(deps: IntakeDeps) {
    this.config = deps.config;
    this.clock = deps.clock ?? systemClock;
    this.logger = deps.logger ?? pino({ level: deps.config.logLevel });
    this.metrics = deps.metrics ?? new Metrics();
    this.store = deps.store ?? openStore(deps.config.store, deps.cwd);
    for (const channel of deps.config.channels) this.channels.set(channel.id, { config: channel, adapter: createAdapter(channel) });
    this.outlet = new Outlet((error) => this.logger.error({ err: error }, 'output listener failed'));
    this.debouncer = new Debouncer({
      clock: this.clock,
      // A part of a channel removed since it was buffered flushes under the global options.
      optionsFor: (part) => this.channels.get(part.event.channel)?.config.debounce ?? this.config.debounce,
      flush: (batch) => this.flushBatch(batch),
      onError: (error, batch) => this.logger.error({ err: error, sessionKey: batch.sessionKey, parts: batch.parts.length }, 'flush failed; the batch stays in the store'),
    });
    this.metrics.gauge('inbox_debounce_buffers_open', 'Debounce buffers currently open', () => this.debouncer.open);
    this.metrics.gauge('inbox_event_streams_open', 'Event stream clients connected', () => this.outlet.streamCount);
  }

  /** Re-arm the buffers a previous run left open, and start housekeeping. */
  async start(): Promise<void> {
    if (!this.store.durable) this.logger.warn('store "memory" is volatile: claims, open buffers and the outbox are lost on restart; use "sqlite:<path>" to keep them');
    const parts = await this.store.openParts();
    this.debouncer.restore(parts);
    if (parts.length > 0) this.logger.info({ parts: parts.length, buffers: this.debouncer.open }, 're-armed open debounce buffers');
    this.trimTimer = setInterval(() => void this.trim(), 60_000);
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
    adapter.verify(delivery);
    const normalized = adapter.normalize(parseJson(delivery.body, this.config.server.maxDepth), delivery);
    if (normalized.ignored) this.metrics.message(channel.id, adapter.name, 'ignored', normalized.ignored);
    const summary = normalized.events.length > 0 ? await this.record(channel, normalized.events, delivery.now) : { accepted: 0, duplicates: 0, events: [] };
    if (normalized.reply) return normalized.reply;
    return { status: 200, body: summary };
  }

  private async record(channel: ChannelConfig, events: InboundEvent[], now: number): Promise<IngestSummary> {
    const admissions: Admission[] = [];
    const plans = events.map((event) => dedupPlan(event, channel.dedup));
    for (const [i, event] of events.entries()) {
      const claims = (plans[i] as ReturnType<typeof dedupPlan>).claims;
      if (event.kind === 'message') {
        admissions.push({ claims, part: { id: partId(now), debounceKey: debounceKeyOf(event), receivedAt: now, event: { ...event, raw: undefined } } });
      } else {
        admissions.push({ claims, emit: this.eventDraft(event, now) });
      }
    }
    let results;
    try {
      results = await this.store.admit(admissions, now);
    } catch (error) {
      this.logger.error({ err: error, channel: channel.id }, 'store unavailable; delivery refused');
      throw new UnavailableError('store_unavailable', 'The store is unreachable; nothing was recorded, retry later', 5, { channel: channel.id, cause: error });
    }

    const summary: IngestSummary = { accepted: 0, duplicates: 0, events: [] };
    for (const [i, event] of events.entries()) {
      const result = results[i]!;
      const admission = admissions[i]!;
      this.metrics.message(channel.id, event.adapter, 'received');
      if (result.taken !== -1) {
        const kind = plans[i]!.kinds[result.taken]!;
        this.metrics.message(channel.id, event.adapter, kind);
        this.logger.info({ channel: channel.id, messageId: event.platformId, sessionKey: event.sessionKey, kind }, 'duplicate ignored');
        summary.duplicates++;
        summary.events.push({ id: event.id, verdict: verdictOf[kind] });
        continue;
      }
      summary.accepted++;
      summary.events.push({ id: event.id, verdict: 'accepted' });
      if (admission.part) this.debouncer.add(admission.part, isCommand(event.text));
      if (result.record) this.publish(result.record);
    }
    return summary;
  }

  private eventDraft(event: InboundEvent, now: number): OutboxDraft {
    const id = outputId(now);
    const bot = ownBot(event);
    const output = buildProcessedEvent(id, event, [{ ...bot, ids: event.fields ?? {} }], { replyBot: bot, bots: [bot] });
    return this.draft(output, now);
  }

  private draft(output: Omit<Output, 'seq'>, now: number): OutboxDraft {
    return {
      id: output.id, type: output.type, sessionKey: output.sessionKey, channel: output.channel, createdAt: now,
      body: JSON.stringify(output), state: this.config.agent.url ? 'pending' : 'none',
    };
  }

  private async flushBatch(batch: Batch): Promise<void> {
    const first = batch.parts[0]!.event;
    const mediaMode = this.channels.get(first.channel)?.config.debounce.media ?? 'all';
    const media: PartMedia[] = batch.parts.map(() => ({ media: [], errors: [] }));
    const bot = ownBot(first);
    const message = buildProcessedMessage(outputId(this.clock.now()), batch.parts, media, mediaMode, { replyBot: bot, bots: [bot], mentionedBots: [] });
    const record = await this.store.flush(batch.parts.map((part) => part.id), this.draft(message, this.clock.now()));
    if (batch.parts.length > 1) {
      this.metrics.message(first.channel, first.adapter, 'debounced', batch.parts.length - 1);
      this.logger.info({ channel: first.channel, sessionKey: batch.sessionKey, merged: batch.parts.length, reason: batch.reason, seq: record.seq }, `merged ${batch.parts.length} messages`);
    }
    this.publish(record);
  }

  private publish(record: OutboxRecord): void {
    this.metrics.message(record.channel, this.channels.get(record.channel)?.adapter.name ?? 'unknown', 'emitted');
    this.outlet.publish(record);
  }

  /** Count a refused delivery against its channel. */
  rejected(channelId: string, error: unknown): void {
    const channel = this.channels.get(channelId);
    if (!channel) return;
    this.metrics.message(channel.config.id, channel.adapter.name, 'rejected');
    this.logger.warn({ channel: channelId, code: isIntakeError(error) ? error.code : 'internal', reason: (error as Error).message }, 'delivery rejected');
  }

  private async trim(): Promise<void> {
    try {
      const { retentionMs, retentionCount } = this.config.events;
      await this.store.trimOutbox(this.clock.now() - retentionMs, retentionCount);
    } catch (error) {
      this.logger.warn({ err: error }, 'outbox trim failed');
    }
  }

  /** Reasons the service should not get traffic now (empty when ready). */
  readinessProblems(): string[] {
    return [];
  }

  /** `/v1/stats`: per-channel counters, buffers, claims, outbox. */
  async stats(): Promise<Record<string, unknown>> {
    return {
      channels: this.metrics.channelStats(),
      debounce: { open: this.debouncer.open },
      claims: this.store.claimStats(),
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
    await this.store.close();
  }
}

/** Buffers are per session and sender: two people in one group never merge. */
export function debounceKeyOf(event: InboundEvent): string {
  return `${event.sessionKey}\u0000${event.sender.id}`;
}
