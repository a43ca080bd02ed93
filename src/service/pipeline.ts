import compose from 'koa-compose';
import type { Logger } from 'pino';
import type { Channels } from './channels.js';
import type { Clock } from '../core/clock.js';
import type { Emitted, Held } from '../emit/stage.js';
import type { Outlet } from '../emit/outlet.js';
import { IntakeError, isIntakeError } from '../core/errors.js';
import type { CorrelationRecord, InboundEvent } from '../events/inbound.js';
import type { PlatformReply, RawDelivery } from '../events/transport.js';
import type { TraceEntry } from '../events/trace.js';
import type { Gate } from './gate.js';
import type { Handlers } from '../handlers/routes.js';
import { parseJson } from '../http/body.js';
import type { Admitted } from '../ingest/admit.js';
import type { MediaStage } from '../media/index.js';
import type { Metrics } from '../metrics/index.js';
import type { LeasedBatch, OutboxRecord, TurnDone, Turns } from '../core/ports/index.js';
import type { AgentPush } from '../push/agent-push.js';
import type { Retention } from '../retention/retention.js';

/**
 * A step of the inbound chain (`intake.use`): it sees each normalized event before dedup and
 * buffering, and may change it in place (enrich, tag) or drop it by returning without calling
 * `next()`. A step that throws refuses the whole delivery with a 500: nothing is recorded and
 * the platform retries.
 */
export type InboundMiddleware = (event: InboundEvent, next: () => Promise<void>) => unknown;

/** The stages a message meets, built by `createIntake`; the pipeline only runs them, in order. */
export interface PipelineStages {
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** The verdict trail (`/v1/trace`, `/v1/activity`). */
  record(entry: Omit<TraceEntry, 'n'>): void;
  channels: Channels;
  gate: Gate;
  /** `server.maxDepth` and `server.maxKeys`: a body past them is refused before it is parsed. */
  limits: { maxDepth: number; maxKeys: number };
  /** The user's inbound chain, in `use` order. */
  chain: readonly InboundMiddleware[];
  /** One store step for a delivery's events: correlation, claims, buffers. */
  admit(events: readonly InboundEvent[], now: number, deliveryId: string | undefined, dropped: ReadonlySet<InboundEvent> | undefined): Promise<Admitted>;
  handlers: Handlers;
  /** The correlation group of each admitted event, for the library's correlation views. */
  groups: WeakMap<InboundEvent, CorrelationRecord>;
  counts: { duplicates: number };
  media: MediaStage;
  scheduler: { due(deadline: number): void };
  /** Merge a due batch, wait for its media and commit it to the outbox, or hold it for a turn (undefined: the lease was lost). */
  output(batch: LeasedBatch): Promise<Emitted | Held | undefined>;
  /** The store's turns role: a turn closed by the agent (docs/turns.md). */
  turns: Pick<Turns, 'turnDone'>;
  /** Whether a channel keeps agent turns (its `turns.mode` is not `off`). */
  turnsOn(channel: string): boolean;
  outlet: Outlet;
  push: AgentPush | undefined;
  retention: Retention;
}

/**
 * The path of a message, in the order it runs. `inbound` is what every transport calls with
 * one delivery (an HTTP webhook, a socket frame, a polled update); it resolves once everything
 * in it is recorded, with the answer the platform gets. `flush` is what the debounce scheduler
 * calls when a buffer is due, on whichever instance holds its lease.
 */
export function createPipeline(stages: PipelineStages) {
  const { clock, logger, metrics, record, channels, gate, handlers, media, scheduler, outlet, push, retention } = stages;
  const json = (bytes: Buffer) => parseJson(bytes, stages.limits.maxDepth, stages.limits.maxKeys);
  let chain: compose.ComposedMiddleware<InboundEvent> | undefined;
  let chainLength = 0;

  async function inbound(channelId: string, delivery: RawDelivery): Promise<PlatformReply> {
    const { adapter } = channels.require(channelId);
    try {
      // 1. Gate: a stopping service, or an outbox full past agent.maxPending, takes nothing.
      gate.check(channelId);

      // 2. Read: verify the bytes as received, parse them within limits, normalize to events.
      adapter.verify(delivery);
      const body = adapter.parseBody ? adapter.parseBody(delivery.body, stages.limits, json) : parseJson(delivery.body, stages.limits.maxDepth, stages.limits.maxKeys);
      const normalized = adapter.normalize(body, delivery);
      if (normalized.ignored) {
        metrics.message(channelId, adapter.name, 'ignored', normalized.ignored);
        record({ at: delivery.now, channel: channelId, kind: 'verdict', id: '', verdict: 'ignored', reason: `${normalized.ignored} receipt(s) or meta event(s)` });
      }
      let admitted: Admitted | undefined;
      if (normalized.events.length > 0) {
        // 3. The user's chain (`intake.use`): filter, enrich or tag before dedup and buffering.
        const dropped = await screen(channelId, normalized.events);

        // 4. Admit: own-bot guard, correlation, claims and buffer append, one store step.
        const deliveryId = adapter.deliveryId?.(delivery);
        admitted = await gate.admit(channelId, () => stages.admit(normalized.events, delivery.now, deliveryId, dropped));

        // 5. After admission (the answer does not wait): handlers, downloads, the deadline.
        afterAdmission(admitted);
      }

      // 6. Answer: the platform's own convention, else the ingest summary.
      return normalized.reply ?? { status: 200, body: admitted?.summary ?? { accepted: 0, duplicates: 0, events: [] } };
    } catch (error) {
      rejected(channelId, error);
      throw error;
    }
  }

  /** Run the inbound chain over each event; the events it dropped (none without a chain). */
  async function screen(channelId: string, events: readonly InboundEvent[]): Promise<Set<InboundEvent> | undefined> {
    if (chainLength !== stages.chain.length) {
      chain = stages.chain.length === 0 ? undefined : compose([...stages.chain]);
      chainLength = stages.chain.length;
    }
    if (!chain) return undefined;
    const dropped = new Set<InboundEvent>();
    for (const event of events) {
      let passed = false;
      try {
        await chain(event, async () => { passed = true; });
      } catch (error) {
        throw new IntakeError('middleware_failed', 500, `An inbound middleware (intake.use) failed on channel "${channelId}": ${(error as Error).message}; nothing was recorded`, { channel: channelId, stage: 'middleware', cause: error });
      }
      if (!passed) dropped.add(event);
    }
    return dropped;
  }

  function afterAdmission(admitted: Admitted): void {
    for (const [event, group] of admitted.groups) stages.groups.set(event, group);
    stages.counts.duplicates += admitted.repeats.length;
    for (const event of admitted.repeats) handlers.dispatch(event, true);
    for (const { part, deadline } of admitted.accepted) {
      handlers.dispatch(part.event, false);
      if (part.event.media.length > 0) media.begin(part);
      scheduler.due(deadline);
    }
  }

  /** Held messages out, following their turn up: the hold time of each, and the trail. */
  function released(committed: OutboxRecord, batch: LeasedBatch, turn: string): void {
    const now = clock.now();
    for (const part of batch.parts) metrics.turnHold.observe(Math.max(0, now - part.receivedAt) / 1000);
    record({
      at: now, channel: committed.channel, kind: 'turn', id: committed.id, seq: committed.seq, sessionKey: committed.sessionKey,
      messageIds: batch.parts.map((part) => part.event.platformId ?? part.event.id),
      reason: `released at ${new Date(now).toISOString()} (${batch.reason}), following up turn ${turn}`,
    });
  }

  /** A refused delivery: counted and trailed (a client that left was refused nothing). */
  function rejected(channelId: string, error: unknown): void {
    const channel = channels.get(channelId);
    if (!channel) return;
    const code = isIntakeError(error) ? error.code : 'internal';
    if (code === 'client_closed') return;
    metrics.message(channelId, channel.adapter.name, 'rejected');
    record({ at: clock.now(), channel: channelId, kind: 'verdict', id: '', verdict: 'rejected', reason: `${code}: ${(error as Error).message}` });
    logger.warn({ channel: channelId, code, reason: (error as Error).message }, 'delivery rejected');
  }

  async function flush(batch: LeasedBatch): Promise<void> {
    // 7. Build and commit: merge the parts, wait for their media, move them to the outbox (or,
    //    while the session's agent turn is open, hold them for its end: docs/turns.md).
    const emitted = await stages.output(batch);
    if (!emitted) return;
    if ('held' in emitted) return held(emitted);
    // 8. Publish: count, trail, hand to in-process listeners, queue the push (event streams follow the store's tail).
    publish(emitted);
  }

  function held({ held: { by, until, count }, batch }: Held): void {
    const first = batch.parts[0]!.event;
    metrics.message(first.channel, first.adapter, 'held', batch.parts.length);
    record({
      at: clock.now(), channel: first.channel, kind: 'turn', id: by, sessionKey: batch.sessionKey,
      messageIds: batch.parts.map((part) => part.event.platformId ?? part.event.id),
      reason: `held by turn ${by} (${count} held), released when it is done or at ${new Date(until).toISOString()} at the latest`,
    });
  }

  /**
   * The agent closed a turn (`POST /v1/turns/<id>/done`, `intake.turnDone`, a push answered
   * `{"turn":"done"}`): what it held is due now, taken by this instance's scheduler or another's.
   */
  async function turnDone(outputId: string, channel = ''): Promise<TurnDone> {
    const now = clock.now();
    const done = await stages.turns.turnDone(outputId, now);
    if (done.result !== 'closed') return done;
    if (done.held > 0) scheduler.due(now);
    record({ at: now, channel, kind: 'turn', id: outputId, sessionKey: done.sessionKey, reason: `turn done; ${done.held} held message(s) released` });
    return done;
  }

  /** The agent's 2xx answer to a push: `{"turn":"done"}` closes the output's turn; anything else leaves it to `turns.maxMs`. */
  async function pushAnswered(pushed: OutboxRecord, body: string): Promise<void> {
    if (pushed.type !== 'chat.processedMessage' || !stages.turnsOn(pushed.channel)) return;
    const text = body.trim();
    if (text === '') return;
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      answer = undefined;
    }
    if (typeof answer === 'object' && answer !== null && (answer as { turn?: unknown }).turn === 'done') {
      await turnDone(pushed.id, pushed.channel);
      return;
    }
    logger.warn({ channel: pushed.channel, id: pushed.id, answer: text.slice(0, 200) }, 'agent answer is not {"turn":"done"}; the turn stays open until it is done or turns.maxMs');
  }

  function publish({ record: committed, output: built, batch, link }: Emitted): void {
    const first = batch.parts[0]!.event;
    metrics.message(committed.channel, first.adapter, 'emitted');
    if (link?.field === 'followsUp') released(committed, batch, link.id);
    if (batch.parts.length > 1) {
      metrics.message(first.channel, first.adapter, 'debounced', batch.parts.length - 1);
      logger.info({ channel: first.channel, sessionKey: batch.sessionKey, merged: batch.parts.length, reason: batch.reason, seq: committed.seq }, `merged ${batch.parts.length} messages`);
    }
    record({
      at: clock.now(), channel: committed.channel, kind: 'batch', id: committed.id, seq: committed.seq, sessionKey: committed.sessionKey,
      // The ids the output lists (platform ids where there are): a trace by any of them finds it.
      messageIds: committed.messageIds ?? batch.parts.map((part) => part.event.platformId ?? part.event.id), reason: batch.reason, state: committed.state,
    });
    outlet.publish(committed, built);
    if (committed.state === 'pending') push?.added();
    retention.added();
  }

  return { inbound, flush, rejected, turnDone, pushAnswered };
}

export type Pipeline = ReturnType<typeof createPipeline>;
