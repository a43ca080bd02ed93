import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import type { LeasedBatch, OutboxRecord, TurnDone, TurnRule, Turns, TurnView } from '../core/ports/index.js';
import type { TraceEntry } from '../events/trace.js';
import type { Metrics } from '../metrics/index.js';

/** Where a channel's `turns` settle (its own over the global ones). */
export interface TurnRules {
  turnsOf(channel: string): TurnRule;
}

export interface AgentTurnsOptions {
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** The store's turns role: a turn closed by the agent, a session's turn read. */
  store: Pick<Turns, 'turnDone' | 'turnOf'>;
  rules: TurnRules;
  /** The debounce scheduler: a closed turn's held buffer is due at once. */
  scheduler: { due(deadline: number): void };
  /** The verdict trail (`/v1/trace`, `/v1/activity`). */
  record(entry: Omit<TraceEntry, 'n'>): void;
}

/** What a turn held back: the turn's output id, when it gives the batch up at the latest, how many it holds. */
export interface TurnHold {
  by: string;
  until: number;
  count: number;
}

/**
 * Agent turns (docs/turns.md), as the path of a message meets them: a batch held while its
 * session's turn is open, one released when that turn is done, and the agent closing a turn.
 * The turns themselves are store state; this keeps what the trail and the metrics say of them.
 */
export class AgentTurns {
  constructor(private readonly options: AgentTurnsOptions) {}

  /** Whether a channel keeps agent turns (its `turns.mode` is not `off`). */
  on(channel: string): boolean {
    return this.options.rules.turnsOf(channel).mode !== 'off';
  }

  /** A batch held for its session's open turn: counted and trailed. */
  held({ by, until, count }: TurnHold, batch: LeasedBatch): void {
    const { clock, metrics, record } = this.options;
    const first = batch.parts[0]!.event;
    metrics.message(first.channel, first.adapter, 'held', batch.parts.length);
    record({
      at: clock.now(),
      channel: first.channel,
      kind: 'turn',
      id: by,
      sessionKey: batch.sessionKey,
      messageIds: batch.parts.map((part) => part.event.platformId ?? part.event.id),
      reason: `held by turn ${by} (${count} held), released when it is done or at ${new Date(until).toISOString()} at the latest`,
    });
  }

  /** Held messages out, following their turn up: the hold time of each, and the trail. */
  released(committed: OutboxRecord, batch: LeasedBatch, turn: string): void {
    const { clock, metrics, record } = this.options;
    const now = clock.now();
    for (const part of batch.parts) metrics.turnHold.observe(Math.max(0, now - part.receivedAt) / 1000);
    record({
      at: now,
      channel: committed.channel,
      kind: 'turn',
      id: committed.id,
      seq: committed.seq,
      sessionKey: committed.sessionKey,
      messageIds: batch.parts.map((part) => part.event.platformId ?? part.event.id),
      reason: `released at ${new Date(now).toISOString()} (${batch.reason}), following up turn ${turn}`,
    });
  }

  /**
   * The agent closed a turn (`POST /v1/turns/<id>/done`, `intake.turnDone`, a push answered
   * `{"turn":"done"}`): what it held is due now, taken by this instance's scheduler or another's.
   */
  async done(outputId: string, channel = ''): Promise<TurnDone> {
    const { clock, store, scheduler, record } = this.options;
    const now = clock.now();
    const done = await store.turnDone(outputId, now);
    if (done.result !== 'closed') return done;
    if (done.held > 0) scheduler.due(now);
    record({
      at: now,
      channel,
      kind: 'turn',
      id: outputId,
      sessionKey: done.sessionKey,
      reason: `turn done; ${done.held} held message(s) released`,
    });
    return done;
  }

  /** A session's agent turn: open or not, its output id, and how many messages it holds. */
  of(sessionKey: string): Promise<TurnView> {
    return this.options.store.turnOf(sessionKey, this.options.clock.now());
  }

  /** The agent's 2xx answer to a push: `{"turn":"done"}` closes the output's turn; anything else leaves it to `turns.maxMs`. */
  async answered(pushed: OutboxRecord, body: string): Promise<void> {
    if (pushed.type !== 'chat.processedMessage' || !this.on(pushed.channel)) return;
    const text = body.trim();
    if (text === '') return;
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      answer = undefined;
    }
    if (typeof answer === 'object' && answer !== null && (answer as { turn?: unknown }).turn === 'done') {
      await this.done(pushed.id, pushed.channel);
      return;
    }
    this.options.logger.warn(
      { channel: pushed.channel, id: pushed.id, answer: text.slice(0, 200) },
      'agent answer is not {"turn":"done"}; the turn stays open until it is done or turns.maxMs',
    );
  }
}
