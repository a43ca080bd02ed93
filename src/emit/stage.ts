import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { Batch } from '../debounce/debouncer.js';
import { ownBot, type BotRef, type InboundEvent } from '../events.js';
import type { Metrics } from '../metrics/index.js';
import type { BufferedPart, OutboxDraft, OutboxRecord, Store } from '../store/types.js';
import { buildProcessedEvent, buildProcessedMessage, type PartMedia } from './build.js';
import type { Outlet } from './outlet.js';
import { outputId } from './output-id.js';
import type { Output } from './output.js';

/** What the output needs to know about who delivered an event (the correlator's views). */
export interface BotViews {
  botsForEvent(event: InboundEvent): BotRef[];
  mentionedBots(event: InboundEvent): BotRef[];
  pickReplyBot(event: InboundEvent): BotRef;
  correlation(event: InboundEvent): { deliveries: Array<{ channel: string; botId?: string; ids: Record<string, string> }> };
}

export interface OutputStageOptions {
  config: Config;
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  outlet: Outlet;
  views: BotViews;
  /** Wait for the downloads of a batch. */
  collectMedia(parts: readonly BufferedPart[]): Promise<PartMedia[]>;
  /** `debounce.media` of a channel. */
  mediaMode(channel: string): 'all' | 'first';
  adapterName(channel: string): string;
  /** A record entered the outbox waiting for push. */
  onPending(): void;
}

/**
 * The end of the pipeline: a closed batch becomes one output, moved from the buffer to the
 * outbox in one store step, then published on the emitter, the event stream and the push.
 */
export class OutputStage {
  private sinceTrim = 0;

  constructor(private readonly options: OutputStageOptions) {}

  async flushBatch(batch: Batch): Promise<void> {
    const { views, clock, store, metrics, logger } = this.options;
    const parts = batch.parts;
    const first = parts[0]!.event;
    const now = clock.now();
    if (first.kind !== 'message') {
      // A held notice or request: one output naming every bot that delivered it.
      const participants = views.correlation(first).deliveries.map((d) => ({ ...ownBot(d), ids: d.ids }));
      const output = buildProcessedEvent(outputId(now), first, participants, { replyBot: views.pickReplyBot(first), bots: views.botsForEvent(first) });
      this.publish(await store.flush(parts.map((part) => part.id), this.draft(output, now)), output);
      return;
    }
    const last = parts[parts.length - 1]!.event;
    const media = await this.options.collectMedia(parts);
    const single = parts.length === 1;
    const bots = single ? views.botsForEvent(first) : uniqueBots(parts.flatMap((part) => views.botsForEvent(part.event)));
    const mentionedBots = single ? views.mentionedBots(first) : uniqueBots(parts.flatMap((part) => views.mentionedBots(part.event)));
    const message = buildProcessedMessage(outputId(now), parts, media, this.options.mediaMode(first.channel), { replyBot: views.pickReplyBot(last), bots, mentionedBots });
    const record = await store.flush(parts.map((part) => part.id), this.draft(message, now));
    if (parts.length > 1) {
      metrics.message(first.channel, first.adapter, 'debounced', parts.length - 1);
      logger.info({ channel: first.channel, sessionKey: batch.sessionKey, merged: parts.length, reason: batch.reason, seq: record.seq }, `merged ${parts.length} messages`);
    }
    this.publish(record, message);
  }

  /** Drop retained output past `events.retentionMs` / `retentionCount` (never undelivered). */
  async trim(): Promise<void> {
    this.sinceTrim = 0;
    try {
      const { retentionMs, retentionCount } = this.options.config.events;
      await this.options.store.trimOutbox(this.options.clock.now() - retentionMs, retentionCount);
    } catch (error) {
      this.options.logger.warn({ err: error }, 'outbox trim failed');
    }
  }

  private draft(output: Omit<Output, 'seq'>, now: number): OutboxDraft {
    return {
      id: output.id, type: output.type, sessionKey: output.sessionKey, channel: output.channel, createdAt: now,
      body: JSON.stringify(output), state: this.options.config.agent.url ? 'pending' : 'none',
    };
  }

  private publish(record: OutboxRecord, output: Omit<Output, 'seq'>): void {
    this.options.metrics.message(record.channel, this.options.adapterName(record.channel), 'emitted');
    this.options.outlet.publish(record, output);
    if (record.state === 'pending') this.options.onPending();
    // Trim by count as the outbox grows, not only on the minute: a busy memory store would
    // otherwise hold a minute of output on the heap.
    if (++this.sinceTrim >= Math.max(100, this.options.config.events.retentionCount / 10)) void this.trim();
  }
}

function uniqueBots(bots: BotRef[]): BotRef[] {
  const seen = new Set<string>();
  return bots.filter((bot) => {
    const key = `${bot.channel}\u0000${bot.botId ?? ''}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
