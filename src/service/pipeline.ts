import type { Logger } from 'pino';
import type { Channels } from './channels.js';
import type { Clock } from '../core/clock.js';
import type { Correlations } from '../correlate/correlations.js';
import type { Emitted, Held } from '../emit/stage.js';
import type { Outlet } from '../emit/outlet.js';
import type { InboundEvent } from '../events/inbound.js';
import type { ProcessedMessage } from '../events/output.js';
import type { InOrder, PlatformReply, RawDelivery } from '../events/transport.js';
import type { TraceEntry } from '../events/trace.js';
import type { Gate } from './gate.js';
import type { Handlers } from '../handlers/routes.js';
import { parseJson } from '../http/body.js';
import type { Admitted } from '../ingest/admit.js';
import type { InboundChain } from '../ingest/chain.js';
import type { MediaStage } from '../media/index.js';
import type { ForwardReader } from '../emit/forward-reader.js';
import type { Metrics } from '../metrics/index.js';
import type { LeasedBatch } from '../core/ports/index.js';
import type { Retention } from '../retention/retention.js';
import type { AgentTurns } from '../turns/turns.js';
import type { Activation } from '../activation/stage.js';
import type { Addressed } from '../events/context.js';
import type { TypingSignal } from '../adapters/kit/types.js';
import type { BufferedPart } from '../events/inbound.js';
import { isSecondThought } from '../events/second-thought.js';
import type { SentMessage, Takeover } from '../events/context.js';
import type { Revisions } from '../revise/stage.js';
import type { Takeovers } from '../takeover/stage.js';

/** The stages a message meets, built by `createIntake`; the pipeline only runs them, in order. */
export interface PipelineStages {
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** The verdict trail (`/v1/trace`, `/v1/activity`). */
  record(entry: Omit<TraceEntry, 'n'>): void;
  /** A refused delivery: counted and trailed (service/refusals.ts). */
  rejected(channelId: string, error: unknown): void;
  channels: Channels;
  gate: Gate;
  /** `server.maxDepth` and `server.maxKeys`: a body past them is refused before it is parsed. */
  limits: { maxDepth: number; maxKeys: number; bodyLimitBytes: number };
  /** Access (contract §12): why an event's sender or conversation is denied, or undefined. */
  denied(event: InboundEvent): string | undefined;
  /** The user's inbound chain (`intake.use`). */
  chain: Pick<InboundChain, 'screen'>;
  /** One store step for a delivery's events: correlation, claims, buffers. */
  admit(
    events: readonly InboundEvent[],
    now: number,
    deliveryId: string | undefined,
    dropped: ReadonlySet<InboundEvent> | undefined,
  ): Promise<Admitted>;
  /** The correlation group of each admitted event and the duplicate count, for the library's views. */
  correlations: Pick<Correlations, 'admitted'>;
  handlers: Handlers;
  media: MediaStage;
  /** Merged forwards, read while the window is open (emit/forward-reader.ts). */
  forwards: Pick<ForwardReader, 'begin'>;
  scheduler: { due(deadline: number): void };
  /** Typing (contract §13): hold a typing sender's open buffer; its new deadline, or undefined (admission.ts). */
  typing(channelId: string, signal: TypingSignal, now: number): Promise<number | undefined>;
  /**
   * Activation (contract §12): remember what our bots report they sent, mark each message as it
   * arrives, decide each batch as it flushes, keep the rest as context.
   */
  activation: Pick<Activation, 'remember' | 'mark' | 'decide' | 'keep' | 'budget' | 'defer'>;
  /**
   * Second thoughts (contract §13): a recall or an edit applied where its message is; the buffers
   * it may wait in (admission.ts); the downloads of recalled parts deleted; the ids of emitted
   * messages remembered for a later recall or edit.
   */
  revisions: Pick<Revisions, 'revise'>;
  revisionKeys: { of(event: InboundEvent): string[]; seen(event: InboundEvent): void };
  discard(parts: readonly BufferedPart[]): Promise<unknown>;
  /** A human taking over (contract §13): an operator speaking, a takeover found run out at a flush. */
  takeovers: Pick<Takeovers, 'isOperator' | 'spoke' | 'due'>;
  /** What our bots' accounts report sending: a message that did not go through us is a person answering (takeover). */
  humanSent(channelId: string, sent: readonly SentMessage[], now: number): Promise<void>;
  /** Merge a due batch (its `parts` as revisions leave them), wait for its media and commit it to the outbox, or hold it for a turn (undefined: the lease was lost). */
  output(batch: LeasedBatch, reach: Addressed, parts: readonly BufferedPart[]): Promise<Emitted | Held | undefined>;
  /** Agent turns (docs/turns.md): a batch held for its session's turn, or released when it ended. */
  turns: Pick<AgentTurns, 'held' | 'released'>;
  outlet: Outlet;
  /** The push, or the workers' claims: told of each output committed `pending`. */
  delivery: { added(): void } | undefined;
  retention: Retention;
}

/**
 * The path of a message, in the order it runs. `inbound` is what every transport calls with
 * one delivery (an HTTP webhook, a socket frame, a polled update); it resolves once everything
 * in it is recorded, with the answer the platform gets. `flush` is what the debounce scheduler
 * calls when a buffer is due, on whichever instance holds its lease; `publish` hands what it
 * committed on. A transport whose deliveries keep an order (a socket's frames, a polled page)
 * passes `turn`: it starts the next delivery once this one reached admission, so the steps before
 * admission run in arrival order and the admissions of a read are one store step.
 */
export function createPipeline(stages: PipelineStages) {
  const json = (bytes: Buffer) => parseJson(bytes, stages.limits.maxDepth, stages.limits.maxKeys);

  async function inbound(channelId: string, delivery: RawDelivery, turn?: InOrder): Promise<PlatformReply> {
    const { adapter } = stages.channels.require(channelId);
    try {
      // 1. Gate: a stopping service, or an outbox full past agent.maxPending, takes nothing.
      stages.gate.check(channelId);

      // 2. Read: verify the bytes as received, parse them within limits, normalize to events.
      // A check that fetches keys (a JWT channel's) is awaited; the others cost no turn of the loop.
      const verifying = adapter.verify(delivery);
      if (verifying) await verifying;
      const body = adapter.parseBody
        ? adapter.parseBody(delivery.body, stages.limits, json)
        : parseJson(delivery.body, stages.limits.maxDepth, stages.limits.maxKeys);
      const normalized = adapter.normalize(body, delivery);
      //    No platform event passes for one of our own outputs (a notice typed `chat.retracted`).
      for (const event of normalized.events) if (isSecondThought(event)) event.detail = `platform:${event.detail}`;
      if (normalized.ignored) {
        stages.metrics.message(channelId, adapter.name, 'ignored', normalized.ignored);
        stages.record({
          at: delivery.now,
          channel: channelId,
          kind: 'verdict',
          id: '',
          verdict: 'ignored',
          reason: `${normalized.ignored} receipt(s) or meta event(s)`,
        });
      }
      if (normalized.sent) {
        //  Our bot's own account spoke without us: a person is answering there (contract §13).
        await stages.humanSent(channelId, normalized.sent, delivery.now);
        await stages.activation.remember(normalized.sent);
      }
      //    A sender typing holds their open buffer (contract §13): frequent, so logged, not trailed.
      //    The buffer may be one an earlier frame of the same read is opening: wait for it.
      if (turn && normalized.typing?.length) await turn.earlier();
      for (const signal of normalized.typing ?? []) {
        // Best effort: a store that fails here fails the next admit too; the signal alone is not worth a retry.
        const deadline = await stages.typing(channelId, signal, delivery.now).catch((error: unknown) => {
          stages.metrics.storeError('typing');
          stages.logger.warn({ channel: channelId, err: error }, 'typing hold failed; the buffer keeps its deadline');
          return undefined;
        });
        if (deadline === undefined) continue;
        stages.scheduler.due(deadline);
        stages.metrics.message(channelId, adapter.name, 'typing');
        stages.logger.debug({ channel: channelId, sessionKey: signal.sessionKey, deadline }, 'typing holds a buffer');
      }
      //    Second thoughts (contract §13): a recall or an edit is applied where its message is, or,
      //    the message emitted already, becomes the output that says so; of an unknown message, it
      //    goes on as it is (a notice, a new message). Its message may come in an earlier frame of
      //    the same read: that one is recorded first.
      const revising = normalized.events.some(revises);
      if (turn && revising) await turn.earlier();
      const events = revising ? await revise(normalized.events) : normalized.events;
      let admitted: Admitted | undefined;
      if (events.length > 0) {
        // 3. Whether each message addresses our bots, then the user's chain (`intake.use`):
        //    filter, enrich, tag or address before dedup and buffering. A denied sender or
        //    conversation meets neither: admission trails it as denied and keeps it nowhere.
        const open = openOf(events);
        const marking = stages.activation.mark(open);
        if (marking) await marking;
        //  An operator speaking takes the session over before the message is buffered (it becomes context).
        for (const event of open) {
          if (event.kind === 'message' && stages.takeovers.isOperator(event))
            await stages.takeovers.spoke(event, delivery.now);
        }
        const screening = stages.chain.screen(channelId, open);
        const dropped = screening && (await screening);

        // 4. Admit: own-bot guard, correlation, claims and buffer append, one store step.
        const deliveryId = adapter.deliveryId?.(delivery);
        admitted = await stages.gate.admit(channelId, () => {
          const admitting = stages.admit(events, delivery.now, deliveryId, dropped);
          turn?.reached(); // queued in this turn's store step: the next frame of the read may start
          return admitting;
        });

        // 5. After admission (the answer does not wait): handlers, downloads, merged forwards, the deadline.
        stages.correlations.admitted(admitted.groups, admitted.repeats.length);
        for (const event of admitted.repeats) stages.handlers.dispatch(event, true);
        for (const { part, deadline } of admitted.accepted) {
          stages.handlers.dispatch(part.event, false);
          stages.revisionKeys.seen(part.event);
          if (part.event.media.length > 0) stages.media.begin(part);
          if (part.event.fields?.forward_id !== undefined) stages.forwards.begin(part);
          stages.scheduler.due(deadline);
        }
      }

      // 6. Answer: the platform's own convention, else the ingest summary.
      return normalized.reply ?? { status: 200, body: admitted?.summary ?? { accepted: 0, duplicates: 0, events: [] } };
    } catch (error) {
      stages.rejected(channelId, error);
      throw error;
    }
  }

  /** The events whose sender and conversation are not denied: the same array when none is (nearly every delivery). */
  function openOf(events: readonly InboundEvent[]): readonly InboundEvent[] {
    for (const event of events) if (stages.denied(event) !== undefined) return events.filter(notDenied);
    return events;
  }
  const notDenied = (event: InboundEvent) => stages.denied(event) === undefined;

  async function flush(batch: LeasedBatch): Promise<void> {
    // 7. Activation: a batch its conversation's mode does not let through (a group in `mention`
    //    mode, and nothing in it addressed to our bots) becomes that conversation's context.
    //    First the session's second thoughts (contract §13): recalled parts are never emitted (their
    //    downloads go), edited ones carry their new text; a human answering keeps the batch as context.
    const reach = await stages.activation.decide(batch);
    if (reach.recalled.length > 0) recalled(batch, reach.recalled);
    if (reach.takeoverDue) await endDue(batch, reach.takeoverDue);
    if (!reach.addressed) return keep(batch, reach.verdict ?? 'context', reach.reason, reach.parts);
    //    Budgets: a batch over a `drop` budget is kept as context too; over a `merge` one, it
    //    waits in its session's buffer of that budget, merged with what follows, until allowed.
    //    A second thought spends none: what it tells is about what the agent already had.
    const spent = isSecondThought(batch.parts[0]!.event) ? NO_BUDGET : stages.activation.budget(batch);
    const budget = spent instanceof Promise ? await spent : spent;
    if (budget.over) return budget.action === 'drop' ? keep(batch, 'over_budget', budget.reason) : defer(batch, budget);
    // 8. Build and commit: merge the parts, wait for their media, move them to the outbox with
    //    the context they carry (or, while the session's agent turn is open, hold them for its
    //    end: docs/turns.md).
    const emitted = await stages.output(batch, reach, reach.parts);
    if (!emitted) return lost(batch);
    if ('held' in emitted) return stages.turns.held(emitted.held, emitted.batch);
    // 9. Publish: count, trail, hand to in-process listeners, queue the push (event streams follow the store's tail).
    publish(emitted);
  }

  async function keep(
    batch: LeasedBatch,
    verdict: NonEmitted,
    reason: string,
    parts: readonly BufferedPart[] = batch.parts,
  ): Promise<void> {
    if (!(await stages.activation.keep(batch, parts))) return lost(batch);
    notEmitted(batch, verdict, reason);
  }

  /** Each recall or edit of a delivery, applied; the events left to admit (unknown messages', and outputs that say so). */
  async function revise(events: readonly InboundEvent[]): Promise<InboundEvent[]> {
    const left: InboundEvent[] = [];
    for (const event of events) {
      const ref = event.revises;
      if (!ref) {
        left.push(event);
        continue;
      }
      const outcome = await stages.revisions.revise(event, stages.revisionKeys.of(event));
      if (outcome.verdict === 'unknown') {
        left.push(event);
        continue;
      }
      if (outcome.verdict === 'emitted') left.push(outcome.thought);
      // A flush that held the message lost its lease: the buffer is due again at once.
      if (outcome.verdict === 'applied' && outcome.where === 'buffer') stages.scheduler.due(stages.clock.now());
      const verdict = ref.kind === 'recall' ? 'retracted' : 'edited';
      if (outcome.verdict !== 'already') stages.metrics.message(event.channel, event.adapter, verdict);
      const reason =
        outcome.verdict === 'applied'
          ? `${ref.kind} applied where the message ${outcome.where === 'buffer' ? 'waits' : 'is kept as context'}`
          : outcome.verdict === 'emitted'
            ? `${ref.kind} of a message emitted already: told as chat.${verdict}`
            : 'the message was recalled already';
      stages.record({
        at: stages.clock.now(),
        channel: event.channel,
        kind: 'verdict',
        id: event.id,
        sessionKey: event.sessionKey,
        verdict,
        reason,
        messageIds: [ref.messageId],
      });
    }
    return left;
  }

  /** Parts recalled while they waited: never emitted, their downloads deleted (counted when the recall came). */
  function recalled(batch: LeasedBatch, parts: readonly BufferedPart[]): void {
    void stages.discard(parts).catch(() => undefined);
    stages.record({
      at: stages.clock.now(),
      channel: parts[0]!.event.channel,
      kind: 'batch',
      id: parts[0]!.event.id,
      sessionKey: batch.sessionKey,
      verdict: 'retracted',
      reason: 'recalled before it was emitted',
      messageIds: parts.map((part) => part.event.platformId ?? part.event.id),
    });
  }

  /** A takeover the flush found run out: ended here unless its timer did (best effort: the next flush tries again). */
  async function endDue(batch: LeasedBatch, takeover: Takeover): Promise<void> {
    await stages.takeovers.due(batch.parts[0]!.event, takeover).catch((error: unknown) => {
      stages.logger.warn(
        { err: error, sessionKey: batch.sessionKey },
        'takeover end failed; the next flush tries again',
      );
    });
  }

  async function defer(batch: LeasedBatch, budget: Parameters<PipelineStages['activation']['defer']>[1]) {
    if (!(await stages.activation.defer(batch, budget))) return lost(batch);
    notEmitted(batch, 'over_budget', budget.reason);
  }

  /** Kept, deferred or committed, a batch whose lease another instance took meanwhile changes nothing here. */
  function lost(batch: LeasedBatch): void {
    stages.logger.warn(
      { sessionKey: batch.sessionKey, fence: batch.fence },
      'flush lease lost; another instance owns this batch',
    );
  }

  /** A batch that did not reach the agent: counted and trailed with why. */
  function notEmitted(batch: LeasedBatch, verdict: NonEmitted, reason: string): void {
    const first = batch.parts[0]!.event;
    // Recalled parts were counted when their recall came.
    if (verdict !== 'retracted') stages.metrics.message(first.channel, first.adapter, verdict, batch.parts.length);
    stages.record({
      at: stages.clock.now(),
      channel: first.channel,
      kind: 'verdict',
      id: first.id,
      sessionKey: batch.sessionKey,
      verdict,
      reason,
      messageIds: batch.parts.map((part) => part.event.platformId ?? part.event.id),
    });
  }

  function publish({ record: committed, output: built, batch, link }: Emitted): void {
    const first = batch.parts[0]!.event;
    stages.metrics.message(committed.channel, first.adapter, 'emitted');
    if (link?.field === 'followsUp') stages.turns.released(committed, batch, link.id);
    if (batch.parts.length > 1) {
      stages.metrics.message(first.channel, first.adapter, 'debounced', batch.parts.length - 1);
      stages.logger.info(
        {
          channel: first.channel,
          sessionKey: batch.sessionKey,
          merged: batch.parts.length,
          reason: batch.reason,
          seq: committed.seq,
        },
        `merged ${batch.parts.length} messages`,
      );
    }
    stages.record({
      at: stages.clock.now(),
      channel: committed.channel,
      kind: 'batch',
      id: committed.id,
      seq: committed.seq,
      sessionKey: committed.sessionKey,
      // The ids the output lists (platform ids where there are): a trace by any of them finds it.
      messageIds: committed.messageIds ?? batch.parts.map((part) => part.event.platformId ?? part.event.id),
      reason: batch.reason,
      state: committed.state,
    });
    const context = (built as Partial<ProcessedMessage>).context ?? [];
    if (context.length > 0) {
      // The messages it carries as context: a trace of one finds the output that carried it.
      stages.record({
        at: stages.clock.now(),
        channel: committed.channel,
        kind: 'batch',
        id: committed.id,
        seq: committed.seq,
        sessionKey: committed.sessionKey,
        verdict: 'context',
        reason: `carried as context by ${committed.id}`,
        messageIds: context.map((message) => message.messageId),
      });
    }
    stages.outlet.publish(committed, built);
    if (committed.state === 'pending') stages.delivery?.added();
    stages.retention.added();
  }

  return { inbound, flush };
}

const NO_BUDGET = { over: false } as const;
const revises = (event: InboundEvent) => event.revises !== undefined;

/** Why a batch was not emitted. */
type NonEmitted = 'context' | 'over_budget' | 'retracted' | 'human_active';

export type Pipeline = ReturnType<typeof createPipeline>;
