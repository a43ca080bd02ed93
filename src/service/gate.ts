import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { counted, UnavailableError } from '../core/errors.js';
import type { Metrics } from '../metrics/index.js';
import type { AgentPush } from '../push/agent-push.js';

/** Retry-After of a 503 for a store that could not record, and how long readiness then fails. */
export const STORE_RETRY_AFTER_S = 5;
/** Retry-After of a 503 while too many debounce buffers wait for their flush. */
export const BACKLOG_RETRY_AFTER_S = 5;

export interface GateOptions {
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** The push to the agent or the workers' claims, when configured: a full outbox refuses deliveries. */
  push: Pick<AgentPush, 'saturated' | 'pending'> | undefined;
  maxPending: number;
  /** The open debounce buffers: past `max` (`debounce.maxOpenBuffers`) deliveries are refused. */
  buffers: {
    count(): Promise<number>;
    max: number;
    /** How old a count may be before the next admission counts again: 0 for a local store (a map's size), more for a shared one (a round trip). */
    maxAgeMs: number;
  };
}

/**
 * Whether a delivery may come in now, and what readiness says: exactly when a delivery would
 * be refused with a 503 (shutting down, the outbox full, the store unable to record), so a
 * load balancer stops sending what would be refused anyway.
 */
export class Gate {
  private closingSince: number | undefined;
  /** A stop is coming (SIGTERM, `server.drainMs`): readiness fails while deliveries are still taken. */
  private drainingSince: number | undefined;
  /** The last admission failed (disk full, Redis away): readiness fails for the 503's Retry-After. */
  private admitFailing: { at: number; reason: string } | undefined;
  /** Deliveries being admitted now: a stop waits for them (they are answered 200). */
  private admitting = 0;
  private admitted: (() => void) | undefined;
  /** The last count of open debounce buffers, when it was taken, and the count under way. */
  private open = 0;
  private countedAt = -Infinity;
  private counting: Promise<number> | undefined;

  constructor(private readonly options: GateOptions) {}

  get closing(): boolean {
    return this.closingSince !== undefined;
  }

  /** Throws the 503 a delivery gets while the service takes none. */
  check(channel: string): void {
    if (this.closing)
      throw new UnavailableError('shutting_down', 'The service is shutting down; retry shortly', 5, { channel });
    const { push } = this.options;
    if (push?.saturated) {
      throw new UnavailableError(
        'outbox_full',
        `${counted(push.pending, 'message')} waiting for the agent (agent.maxPending ${this.options.maxPending}); retry later`,
        30,
        { channel },
      );
    }
  }

  /**
   * Run one admission step: counted while it runs (a stop waits for it), refused while the
   * flush backlog is past `debounce.maxOpenBuffers`, and a store failure becomes a 503.
   */
  async admit<T>(channel: string, step: () => Promise<T>): Promise<T> {
    this.admitting++;
    try {
      const checking = this.checkBacklog(channel);
      if (checking) await checking;
      try {
        const result = await step();
        this.admitFailing = undefined;
        return result;
      } catch (error) {
        this.admitFailing = { at: this.options.clock.now(), reason: (error as Error).message };
        this.options.metrics.storeError('admit');
        this.options.logger.error({ err: error, channel }, 'store unavailable; delivery refused');
        throw new UnavailableError(
          'store_unavailable',
          `The store is unreachable; ${outcomeOf(error)}, retry later`,
          STORE_RETRY_AFTER_S,
          { channel, cause: error },
        );
      }
    } finally {
      if (--this.admitting === 0) this.admitted?.();
    }
  }

  /** Whether deliveries are being refused for the flush backlog, as of the last count. */
  get backlogged(): boolean {
    return this.open >= this.options.buffers.max;
  }

  /**
   * Open debounce buffers past `debounce.maxOpenBuffers` mean flushing has fallen behind: each
   * holds memory (about a kilobyte a message, bench/buffer-memory.mjs) and waits past its
   * `maxWaitMs`. Taking more would only grow both without end; refusing makes the platforms
   * retry later, when the backlog has drained.
   */
  private checkBacklog(channel: string): Promise<void> | undefined {
    const counted = this.countBuffers();
    // A fresh count (nearly every delivery) is checked in step: no promise, no turn of the loop.
    if (typeof counted !== 'number') return counted.then((open) => this.refuseBacklog(channel, open));
    this.refuseBacklog(channel, counted);
    return undefined;
  }

  /** Refused while `open` buffers are at `debounce.maxOpenBuffers`. */
  private refuseBacklog(channel: string, open: number): void {
    const { max } = this.options.buffers;
    if (open >= max) {
      throw new UnavailableError(
        'debounce_backlog',
        `${open} debounce buffers wait for their flush (debounce.maxOpenBuffers ${max}): flushing has fallen behind; nothing was recorded, retry later`,
        BACKLOG_RETRY_AFTER_S,
        { channel },
      );
    }
  }

  /** The open debounce buffers, counted again once the last count is `maxAgeMs` old; callers meanwhile share one count. */
  countBuffers(): Promise<number> | number {
    const { buffers, clock } = this.options;
    if (clock.now() - this.countedAt < buffers.maxAgeMs) return this.open;
    this.counting ??= buffers
      .count()
      .then(
        (open) => {
          this.open = open;
          this.countedAt = clock.now();
          return open;
        },
        () => this.open,
      )
      .finally(() => {
        this.counting = undefined;
      });
    return this.counting;
  }

  /** Fail readiness from now on (a load balancer stops sending) while still taking deliveries. */
  drain(): void {
    this.drainingSince ??= this.options.clock.now();
  }

  /** Refuse deliveries from now on; resolves once those being admitted are recorded. */
  async close(): Promise<void> {
    this.closingSince ??= this.options.clock.now();
    if (this.admitting > 0)
      await new Promise<void>((resolve) => {
        this.admitted = resolve;
      });
  }

  /** Reasons past the store's own ping (and a stop) that the service should get no traffic now. */
  problems(): string[] {
    const problems: string[] =
      this.drainingSince !== undefined && !this.closing
        ? ['draining: stopping soon (server.drainMs), deliveries still taken']
        : [];
    const failing = this.admitFailing;
    if (failing && this.options.clock.now() - failing.at < STORE_RETRY_AFTER_S * 1000)
      problems.push(`the last delivery could not be recorded: ${failing.reason}`);
    const { push } = this.options;
    if (push?.saturated)
      problems.push(`outbox full: ${push.pending} undelivered (agent.maxPending ${this.options.maxPending})`);
    if (this.backlogged)
      problems.push(
        `flush backlog: ${this.open} debounce buffers open (debounce.maxOpenBuffers ${this.options.buffers.max})`,
      );
    return problems;
  }
}

/**
 * What a failed admission may have left. A store that failed before it wrote (a refused
 * connection, a SQLite transaction rolled back) recorded nothing; one whose answer never came
 * (a command timeout, a link cut mid-command) may still run the write later, on the server.
 * A platform retry of a delivery that was recorded is taken as a duplicate either way.
 */
function outcomeOf(error: unknown): string {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (
      /timed? ?out|connection is closed|socket closed/i.test(cause.message) ||
      code === 'ETIMEDOUT' ||
      code === 'ECONNRESET' ||
      code === 'EPIPE'
    ) {
      return 'the delivery may not have been recorded (the store did not answer in time)';
    }
  }
  return 'nothing was recorded';
}
