import pRetry from 'p-retry';
import type { Logger } from 'pino';
import { Agent, request, type Dispatcher } from 'undici';
import { backoffMs } from '../core/backoff.js';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/schema.js';
import { IntakeError } from '../core/errors.js';
import { outputJson } from '../events/output.js';
import { type OutboxRecord } from '../core/ports/index.js';
import type { PushLease, PushOutcome, PushQueue } from '../core/ports/index.js';
import { retryAfterMs } from '../core/retry-after.js';
import { standardWebhooks } from '../core/signing.js';

/** A failed push attempt; `retryable` errors are tried again later, the others go to dead letters. */
export class PushError extends IntakeError {
  override name = 'PushError';
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
  ) {
    super('push_failed', 502, message, { stage: 'push' });
  }
}

export interface AgentPushOptions {
  config: Config['agent'];
  /** The store's push queue role. */
  queue: PushQueue;
  clock: Clock;
  logger: Logger;
  /** HTTP client for the agent. @default an undici Agent with keep-alive */
  dispatcher?: Dispatcher;
  /** Jitter source, 0 <= x < 1. @default Math.random */
  random?: () => number;
  /** Look at the queue this often even without a local reason (a shared store). */
  pollMs?: number;
  /** How long one attempt owns its record before another pusher may take it over. @default timeoutMs x 2 + 5 s */
  leaseMs?: number;
  /** Every attempt's outcome (metrics, the verdict trail). */
  onAttempt(record: OutboxRecord, outcome: PushOutcome): void;
  /** The agent turns, where a channel keeps them (docs/turns.md). Without them an answer's body is not read. */
  turns?: PushTurns;
}

/** What the push needs of agent turns (src/turns/). */
export interface PushTurns {
  /** Whether a channel keeps agent turns: its pushes that time out say how to close a turn instead. */
  on(channel: string): boolean;
  /**
   * The body of the agent's 2xx answer (its first 4 KB, as text), after the delivery is
   * recorded: `{"turn":"done"}` closes the output's agent turn.
   */
  answered(record: OutboxRecord, body: string): Promise<void>;
}

/**
 * Pushes every outbox record to `agent.url`, signed per Standard Webhooks. The queue lives in
 * the store: each session's records go one at a time, in seq order, on whichever instance
 * claims them; sessions go concurrently up to `agent.concurrency`. Network errors, timeouts,
 * 408, 429 and 5xx are retried with jittered backoff scheduled in the store (Retry-After
 * honoured) up to `agent.retries` attempts; any other 4xx, or exhausted retries, go to dead
 * letters. A store error after the agent's 2xx is retried as a write and never makes a dead
 * letter: at worst the lease runs out and the agent gets the record again (it dedups on
 * `webhook-id`).
 */
export class AgentPush {
  private active = 0;
  private pumping = false;
  private again = false;
  private closed = false;
  private timer: unknown;
  private timerAt = Infinity;
  private pollTimer: unknown;
  private readonly stop = new AbortController();
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly leaseMs: number;
  private readonly random: () => number;
  private readonly inflight = new Set<Promise<void>>();
  /** Undelivered and dead records in the store (refreshed after every change, counted between). */
  pending = 0;
  dead = 0;

  constructor(private readonly options: AgentPushOptions) {
    this.ownsDispatcher = options.dispatcher === undefined;
    this.dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 10_000 });
    this.leaseMs = options.leaseMs ?? options.config.timeoutMs * 2 + 5_000;
    this.random = options.random ?? Math.random;
  }

  get url(): string {
    return this.options.config.url as string;
  }

  async start(): Promise<void> {
    await this.refresh();
    if (this.pending > 0)
      this.options.logger.info({ pending: this.pending }, 'resuming delivery of undelivered messages');
    this.poll();
    this.nudge();
  }

  /** A record entered the queue. */
  added(): void {
    this.pending++;
    this.nudge();
  }

  /** Whether ingest should refuse new deliveries (backpressure). */
  get saturated(): boolean {
    return this.pending >= this.options.config.maxPending;
  }

  /** Read the cluster-wide counts again. */
  async refresh(): Promise<void> {
    const counts = await this.options.queue.deliveryCounts();
    this.pending = counts.pending;
    this.dead = counts.dead;
  }

  /** Look for records to send (coalesced: one pass at a time, another if asked meanwhile). */
  nudge(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump().finally(() => {
      this.pumping = false;
      if (this.again) {
        this.again = false;
        this.nudge();
      }
    });
  }

  private poll(): void {
    const { pollMs } = this.options;
    if (pollMs === undefined || this.closed) return;
    this.pollTimer = this.options.clock.setTimeout(() => {
      void this.refresh().catch(() => undefined);
      this.nudge();
      this.poll();
    }, pollMs);
  }

  private async pump(): Promise<void> {
    const { config, queue, clock, logger } = this.options;
    const room = config.concurrency - this.active;
    if (room <= 0) return;
    let leases: PushLease[];
    try {
      leases = await queue.claimPush(clock.now(), this.leaseMs, room);
    } catch (error) {
      logger.error({ err: error }, 'cannot read the push queue; delivery paused for a second');
      this.wake(clock.now() + 1_000);
      return;
    }
    for (const lease of leases) {
      if (this.closed) break;
      this.active++;
      const running = this.deliver(lease).finally(() => {
        this.active--;
        this.inflight.delete(running);
        this.nudge();
      });
      this.inflight.add(running);
    }
    if (leases.length < room) {
      const next = await queue.nextPushAt().catch(() => undefined);
      if (next !== undefined) this.wake(next);
    }
  }

  /** One timer for the earliest scheduled retry. */
  private wake(at: number): void {
    if (this.closed || at >= this.timerAt) return;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.options.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.nudge();
      },
      Math.max(0, at - this.options.clock.now()),
    );
  }

  private async deliver(lease: PushLease): Promise<void> {
    const { config, clock, logger } = this.options;
    const record = lease.record;
    const attempts = record.attempts + 1;
    let outcome: PushOutcome;
    let answer: string | undefined;
    try {
      answer = await this.post(record);
      outcome = { state: 'delivered', attempts };
    } catch (error) {
      if (this.stop.signal.aborted) return; // shutting down: the lease runs out, the record stays queued
      const failure = error instanceof PushError ? error : new PushError((error as Error).message, true);
      if (!failure.retryable || attempts >= config.retries)
        outcome = { state: 'dead', attempts, lastError: failure.message };
      else
        outcome = {
          state: 'retry',
          attempts,
          lastError: failure.message,
          at: clock.now() + this.backoff(attempts, failure.retryAfterMs),
        };
      const then = outcome.state === 'retry' ? '; it is sent again (the same webhook-id) after a backoff' : '';
      logger.warn(
        { channel: record.channel, id: record.id, seq: record.seq, attempt: attempts, reason: failure.message },
        `push to agent failed: ${failure.message}${then}`,
      );
    }
    const acked = await this.ack(lease, outcome);
    if (!acked) return;
    if (outcome.state === 'delivered') this.pending--;
    else if (outcome.state === 'dead') {
      this.pending--;
      this.dead++;
      logger.error(
        { channel: record.channel, id: record.id, seq: record.seq, attempts, reason: outcome.lastError },
        'push to agent gave up; message moved to dead letters',
      );
    } else this.wake(outcome.at);
    this.options.onAttempt(record, outcome);
    if (answer !== undefined && this.options.turns) {
      await this.options.turns.answered(record, answer).catch((error: unknown) => {
        logger.warn(
          { err: error, id: record.id },
          "the agent's answer could not close its turn; it closes at turns.maxMs",
        );
      });
    }
  }

  /** Record an outcome, retrying the write: a store hiccup must not turn a delivery into a dead letter. */
  private async ack(lease: PushLease, outcome: PushOutcome): Promise<boolean> {
    const { queue, clock, logger } = this.options;
    try {
      // No abort signal here: a write that succeeded while close() runs must still count.
      const held = await pRetry(() => queue.ackPush(lease, outcome, clock.now()), {
        retries: 5,
        minTimeout: 100,
        maxTimeout: 2_000,
        shouldRetry: () => !this.closed,
      });
      if (!held)
        logger.warn(
          { id: lease.record.id },
          'push lease lost before the outcome was recorded; another pusher owns the record',
        );
      return held;
    } catch (error) {
      logger.error(
        { err: error, id: lease.record.id, state: outcome.state },
        'cannot record the push outcome; the record is sent again when its lease runs out',
      );
      return false;
    }
  }

  /**
   * The shared backoff with `minBackoffMs` as the shortest wait: the ceiling starts at twice it,
   * so the nth wait is 1x to 2x `minBackoffMs * 2^(n-1)`, and no wait is longer than
   * `maxBackoffMs` (once capped, an attempt an hour). A Retry-After wins when it asks for longer.
   */
  private backoff(attempts: number, retryAfter: number | undefined): number {
    const { minBackoffMs, maxBackoffMs } = this.options.config;
    const jittered = Math.min(
      maxBackoffMs,
      backoffMs(attempts - 1, { minMs: 2 * minBackoffMs, maxMs: 2 * maxBackoffMs }, this.random),
    );
    return Math.max(jittered, Math.min(retryAfter ?? 0, maxBackoffMs));
  }

  /** POST one record; resolves the answer's text when the turns want it. */
  private async post(record: OutboxRecord): Promise<string | undefined> {
    const { config, clock } = this.options;
    const body = outputJson(record);
    const timestamp = Math.floor(clock.now() / 1000);
    let response;
    const timeout = AbortSignal.timeout(config.timeoutMs);
    try {
      response = await request(this.url, {
        method: 'POST',
        dispatcher: this.dispatcher,
        signal: AbortSignal.any([timeout, this.stop.signal]),
        headers: {
          'content-type': 'application/json',
          'webhook-id': record.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': standardWebhooks.sign(config.secret as string, record.id, timestamp, body),
          'user-agent': 'agent-intake',
        },
        body,
      });
    } catch (error) {
      if (timeout.aborted && !this.stop.signal.aborted) throw new PushError(this.timedOut(record), true);
      throw new PushError(`network: ${(error as Error).message}`, true);
    }
    // Read a few KB of the answer at most (keeping the connection when it is short), never an
    // unbounded stream; only a turn's answer is looked at.
    const status = response.statusCode;
    const answered = status >= 200 && status < 300;
    if (answered && this.options.turns) return readAtMost(response.body, ANSWER_LIMIT);
    await response.body.dump({ limit: ANSWER_LIMIT }).catch(() => undefined);
    if (answered) return undefined;
    const retryable = status === 408 || status === 429 || status >= 500;
    throw new PushError(
      `agent answered HTTP ${status}`,
      retryable,
      retryAfterMs(response.headers['retry-after'], clock.now(), config.maxBackoffMs),
    );
  }

  /**
   * What a push that outran `agent.timeoutMs` means, and what to do: an agent that answers only
   * once it has run (a turn's `{"turn":"done"}` after the model thought) is sent the message
   * again. With turns on its channel, the way out is to answer at once and close the turn later.
   */
  private timedOut(record: OutboxRecord): string {
    const waited = `push to ${displayUrl(this.url)} timed out after ${this.options.config.timeoutMs} ms (agent.timeoutMs)`;
    if (this.options.turns?.on(record.channel))
      return `${waited}; answer the push at once (2xx) and close the turn with POST /v1/turns/${record.id}/done when the agent is done`;
    return `${waited}; answer the push with 2xx as soon as the message is received, or raise agent.timeoutMs`;
  }

  /** Send dead letters again: one by id, or up to `limit` oldest. Returns how many were re-queued. */
  async retryDead(id: string | undefined, limit: number): Promise<number> {
    const moved = await this.options.queue.requeueDead(id, limit, this.options.clock.now());
    await this.refresh().catch(() => undefined);
    this.nudge();
    return moved;
  }

  /** Stop sending; an attempt in flight is aborted and its record stays queued. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of [this.timer, this.pollTimer]) if (timer !== undefined) this.options.clock.clearTimeout(timer);
    this.stop.abort();
    await Promise.allSettled([...this.inflight]);
    if (this.ownsDispatcher) await this.dispatcher.close().catch(() => undefined);
  }
}

/** `agent.url` for a log line: without the credentials or query a URL may carry. */
function displayUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

/** Bytes of an agent's answer read (a turn's `{"turn":"done"}` fits many times). */
const ANSWER_LIMIT = 4096;

/** The first `limit` bytes of a body as text; the rest is dropped with the stream. */
async function readAtMost(body: AsyncIterable<Buffer> & { destroy(): unknown }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) {
        body.destroy();
        break;
      }
    }
  } catch {
    // A body cut short answers with what came.
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}
